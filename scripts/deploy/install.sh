#!/usr/bin/env bash
# Install edge-agent as a systemd service on Debian or Raspberry Pi OS, or remove it again.
#
#   sudo scripts/deploy/install.sh --model /opt/edge-agent/models/gemma-4-E2B-it-Q4_K_M.gguf
#   sudo scripts/deploy/install.sh --model ... --mqtt 192.168.1.10   # with the MQTT bridge
#   sudo scripts/deploy/install.sh --model mock:/opt/edge-agent/models/replies.json   # no model
#   sudo scripts/deploy/install.sh --uninstall [--purge]
#   scripts/deploy/install.sh --dry-run ...        # prints every step, changes nothing, needs no root
#
# Everything that can be checked (the arguments, the checkout, the model, the Python) is checked
# before the first change, apt-get and the user included: a run that stops, stops having changed
# nothing. Running it again is safe: each step checks what is already there and only does what
# is missing. An existing /etc/edge-agent/config.toml is kept; --model rewrites only its model
# line, and --mqtt only its [mqtt] host.
set -euo pipefail

readonly SERVICE=edge-agent
readonly PREFIX=/opt/edge-agent
readonly VENV=$PREFIX/venv
readonly MODELS_DIR=$PREFIX/models
readonly CONFIG_DIR=/etc/edge-agent
readonly CONFIG=$CONFIG_DIR/config.toml
readonly UNIT_PATH=/etc/systemd/system/$SERVICE.service
readonly DROPIN_DIR=/etc/systemd/system/$SERVICE.service.d
# The broker drop-in (docs/mqtt.md): the unit reaches loopback only, this adds the broker.
readonly MQTT_DROPIN=$DROPIN_DIR/mqtt-broker.conf
readonly STATE_DIR=/var/lib/$SERVICE
readonly CACHE_DIR=/var/cache/$SERVICE
# The client on everyone's PATH.
readonly CLIENT_LINK=/usr/local/bin/$SERVICE
# Debian packages that building llama-cpp-python (it compiles llama.cpp) and a venv need.
readonly APT_PACKAGES=(python3 python3-venv python3-dev build-essential cmake)
# The venv is built from the distribution's Python, never whatever python3 is first on PATH (a
# pyenv shim under /root, say, which the service cannot reach under ProtectHome).
readonly SYSTEM_PYTHON=/usr/bin/python3

SOURCE_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MODEL=""
# The file $MODEL names: the GGUF, or for mock:FILE the scripted replies; empty for the embedded.
MODEL_FILE=""
# The copy of the checkout pip builds from (copy_source); removed when the script ends.
BUILD_DIR=""
MQTT_HOST=""
# The broker's addresses for the drop-in; empty for a broker on loopback, which needs none.
MQTT_ADDRESSES=""
DRY_RUN=0
NOT_READY=""  # a dry run's reason why a real run would stop (it shows the steps all the same)
UNINSTALL=0
PURGE=0
ADD_USERS=()
ASSUME_YES=0

usage() {
    cat <<EOF
Usage: $0 [--model PATH|default|mock:FILE] [--add-user NAME]... [--mqtt HOST]
          [--source DIR] [--yes] [--dry-run]
       $0 --uninstall [--purge] [--dry-run]

Installs edge-agent under $PREFIX, runs it as the system user $SERVICE from the unit
$UNIT_PATH, and starts it.

  --model PATH     the GGUF the daemon serves (Gemma 4 E2B in production); 'default' is the
                   embedded Gemma 3 270M. Asked for when omitted on a terminal. Keep the file
                   outside /home, /root and /tmp: the service cannot see those (ProtectHome,
                   PrivateTmp). $MODELS_DIR/ is the place for it.
                   'mock:FILE' serves the scripted replies of a JSON file instead of a
                   model (systemd/config.example.toml): for trying the service and its
                   clients before a model is there, and for tests.
  --add-user NAME  lets NAME ask the daemon (adds it to group $SERVICE). Repeatable. NAME
                   must log out and in again before the group counts.
  --mqtt HOST      turns on the MQTT bridge (docs/mqtt.md) to the broker at HOST, an address or
                   a name (resolved now): installs the mqtt extra, sets [mqtt] host in the
                   config and, for a broker beyond loopback, writes the drop-in that lets the
                   service reach it: $MQTT_DROPIN
  --source DIR     the edge-agent checkout to install (default: $SOURCE_DIR).
  --yes            never ask; --model defaults to 'default'.
  --uninstall      stops and removes the service and the venv; keeps config, state and cache.
  --purge          with --uninstall, also removes them and the $SERVICE user and group.
  --dry-run        prints every step without doing it.
EOF
}

# Messages may quote what the user typed: control characters in it must not reach the terminal.
printable() {
    local text="$*"
    printf '%s' "${text//[[:cntrl:]]/?}"
}

die() {
    printf 'install.sh: %s\n' "$(printable "$@")" >&2
    exit 1
}

# Every change goes through here, so --dry-run shows exactly what a real run would do.
step() {
    printf '+'
    printf ' %q' "$@"
    printf '\n'
    if [[ $DRY_RUN -eq 0 ]]; then
        "$@"
    fi
}

# A step that was already done on an earlier run.
skip() {
    printf '= %s\n' "$(printable "$@")"
}

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --model)
                [[ $# -ge 2 ]] || die "--model needs a path"
                MODEL=$2
                shift 2
                ;;
            --model=*)
                MODEL=${1#--model=}
                shift
                ;;
            --mqtt)
                [[ $# -ge 2 && -n $2 ]] || die "--mqtt needs the broker's address or name"
                MQTT_HOST=$2
                shift 2
                ;;
            --mqtt=*)
                MQTT_HOST=${1#--mqtt=}
                [[ -n $MQTT_HOST ]] || die "--mqtt needs the broker's address or name"
                shift
                ;;
            --add-user)
                [[ $# -ge 2 ]] || die "--add-user needs a user name"
                ADD_USERS+=("$2")
                shift 2
                ;;
            --source)
                [[ $# -ge 2 ]] || die "--source needs a directory"
                SOURCE_DIR=$2
                shift 2
                ;;
            --yes | -y) ASSUME_YES=1; shift ;;
            --dry-run) DRY_RUN=1; shift ;;
            --uninstall) UNINSTALL=1; shift ;;
            --purge) PURGE=1; shift ;;
            -h | --help) usage; exit 0 ;;
            *) usage >&2; die "unknown argument: $1" ;;
        esac
    done
    if [[ $PURGE -eq 1 && $UNINSTALL -eq 0 ]]; then
        die "--purge only goes with --uninstall"
    fi
    if [[ $UNINSTALL -eq 1 && ( -n $MODEL || -n $MQTT_HOST || ${#ADD_USERS[@]} -gt 0 ) ]]; then
        die "--uninstall takes only --purge and --dry-run"
    fi
}

require_root() {
    if [[ $DRY_RUN -eq 0 && $EUID -ne 0 ]]; then
        die "run as root (sudo $0 ...), or add --dry-run to see the steps"
    fi
}

check_users() {
    local user
    for user in "${ADD_USERS[@]}"; do
        # "$USER" is empty in some root shells (sudo -i): refuse instead of adding nobody.
        [[ -n $user ]] || die "--add-user got an empty name (is \$USER empty in this shell?); pass the name itself, as in: sudo $0 ... --add-user \"\$(id -un)\" from your own shell"
        getent passwd "$user" >/dev/null || die "no user $user to add to group $SERVICE"
    done
}

choose_model() {
    if [[ -z $MODEL && -f $CONFIG ]]; then
        # A reinstall serves what the config already names, without asking again.
        MODEL=$(sed -n -E '/^\[model\]/,/^\[/ s/^path *= *"(.*)"/\1/p' "$CONFIG" | head -n 1)
        MODEL=${MODEL:-default}
        [[ $MODEL == default ]] || MODEL_FILE=${MODEL#mock:}
        skip "model $MODEL, from $CONFIG"
        return
    fi
    if [[ -z $MODEL ]]; then
        if [[ $ASSUME_YES -eq 0 && -t 0 ]]; then
            printf 'Path of the GGUF model to serve (empty: the embedded Gemma 3 270M): '
            read -r MODEL
        fi
        MODEL=${MODEL:-default}
    fi
    if [[ $MODEL == default ]]; then
        return
    fi
    MODEL_FILE=${MODEL#mock:}
    [[ $MODEL_FILE == /* ]] || die "--model needs an absolute path, got: $MODEL"
    case $MODEL_FILE in
        /home/* | /root/* | /run/user/* | /tmp/* | /var/tmp/*)
            die "the service cannot read $MODEL_FILE (ProtectHome/PrivateTmp); move it to $MODELS_DIR/"
            ;;
    esac
    if [[ $MODEL == mock:* ]]; then
        [[ $MODEL_FILE == *.json ]] || die "mock: takes a JSON file of scripted replies, got: $MODEL"
    else
        [[ $MODEL == *.gguf ]] || die "not a GGUF file name: $MODEL"
    fi
    # The path goes into TOML and a sed expression: plain characters only.
    [[ $MODEL_FILE =~ ^[A-Za-z0-9._/+-]+$ ]] || die "rename the file without spaces or quotes: $MODEL"
}

# The model must be there and readable by the service's user before anything is installed or
# enabled: otherwise the unit would start into a model it cannot load.
check_model() {
    if [[ $MODEL == default ]]; then
        return
    fi
    local kind=GGUF
    [[ $MODEL == mock:* ]] && kind="replies file"
    if [[ ! -r $MODEL_FILE ]]; then
        if [[ $DRY_RUN -eq 1 ]]; then
            # The steps are still shown (what the install will do once the file is there), but
            # the dry run ends in failure: a real run would stop here, before any of them.
            printf '! %s does not exist yet; copy the %s there before the service starts\n' "$MODEL_FILE" "$kind"
            NOT_READY="cannot read $MODEL_FILE: a real install stops before any step until the $kind is there"
            return
        fi
        die "cannot read $MODEL_FILE; copy the $kind there first"
    fi
    [[ -f $MODEL_FILE ]] || die "$MODEL_FILE is not a file; pass the path of a $kind"
    if [[ $MODEL == mock:* ]]; then
        return  # the daemon reads the replies at start, and stops with the reason if they are bad
    fi
    [[ $(head -c 4 "$MODEL") == GGUF ]] || die "$MODEL is not a GGUF file (it does not start with GGUF); download it again"
}

# Whether everyone may read $1: the file readable by others, every directory above it searchable.
others_can_read() {
    local path mode
    path=$(readlink -f -- "$1") || return 1
    mode=$(stat -c %a -- "$path") || return 1
    (( 8#$mode & 4 )) || return 1
    while [[ $path != / ]]; do
        path=$(dirname -- "$path")
        mode=$(stat -c %a -- "$path") || return 1
        (( 8#$mode & 1 )) || return 1
    done
}

# The service's user must be able to read the model: root can read what it may not.
check_model_access() {
    if [[ $MODEL == default || ! -r $MODEL_FILE ]]; then
        return  # the embedded model, or a dry run (check_model stops a real one without a file)
    fi
    local readable
    if [[ $EUID -eq 0 ]] && getent passwd "$SERVICE" >/dev/null; then
        setpriv --reuid "$SERVICE" --regid "$SERVICE" --clear-groups -- test -r "$MODEL_FILE" \
            && readable=1 || readable=0
    else
        # Not created yet (or no root to become it): a new system user reads what others may.
        others_can_read "$MODEL_FILE" && readable=1 || readable=0
    fi
    [[ $readable -eq 1 ]] \
        || die "user $SERVICE cannot read $MODEL_FILE; make it readable: chmod 0644 the file and 0755 its directories"
}

check_source() {
    [[ -f $SOURCE_DIR/pyproject.toml ]] || die "no edge-agent checkout at $SOURCE_DIR (no pyproject.toml)"
    [[ -f $SOURCE_DIR/systemd/$SERVICE.service && -f $SOURCE_DIR/systemd/config.example.toml ]] \
        || die "the checkout at $SOURCE_DIR lacks systemd/$SERVICE.service or systemd/config.example.toml"
}

# The venv's Python must be as new as pyproject.toml's requires-python.
check_python() {
    local wanted major minor
    wanted=$(sed -n -E 's/^requires-python = ">=([0-9]+)\.([0-9]+)"$/\1 \2/p' "$SOURCE_DIR/pyproject.toml")
    read -r major minor <<<"$wanted"
    [[ -n $major && -n $minor ]] || die "cannot read requires-python from $SOURCE_DIR/pyproject.toml"
    if [[ ! -x $SYSTEM_PYTHON ]]; then
        printf '! %s is missing; apt-get installs python3 below (Python %s.%s or newer is needed)\n' \
            "$SYSTEM_PYTHON" "$major" "$minor"
        return
    fi
    "$SYSTEM_PYTHON" -c "import sys; sys.exit(sys.version_info < ($major, $minor))" \
        || die "$SYSTEM_PYTHON is older than Python $major.$minor, which edge-agent needs (Debian 12 or Raspberry Pi OS Bookworm have 3.11)"
}

# --mqtt HOST: a plain host name or address, and the addresses the drop-in must allow.
check_mqtt() {
    if [[ -z $MQTT_HOST ]]; then
        return
    fi
    [[ ${#MQTT_HOST} -le 253 && $MQTT_HOST =~ ^[A-Za-z0-9][A-Za-z0-9.:-]*$ ]] \
        || die "--mqtt takes the broker's address or host name (no port, no scheme), got: $MQTT_HOST"
    local addresses
    if [[ $MQTT_HOST =~ ^[0-9.]+$ || $MQTT_HOST == *:* ]]; then
        addresses=$MQTT_HOST
    else
        addresses=$(getent ahosts "$MQTT_HOST" | awk '{print $1}' | sort -u | tr '\n' ' ') || true
        addresses=${addresses% }
        [[ -n $addresses ]] \
            || die "cannot resolve the broker $MQTT_HOST; pass its address instead (--mqtt 192.168.1.10)"
    fi
    local address
    for address in $addresses; do
        case $address in
            127.* | ::1) ;;
            *) MQTT_ADDRESSES="$MQTT_ADDRESSES $address" ;;
        esac
    done
    MQTT_ADDRESSES=${MQTT_ADDRESSES# }
}

# A config a reinstall keeps must still take the new model path.
check_config() {
    [[ -f $CONFIG && -n $MODEL_GIVEN ]] || return 0
    sed -n -E '/^\[model\]/,/^\[/ p' "$CONFIG" | grep -qE '^path *= *"' \
        || die "$CONFIG has no [model] path line to set; add: path = \"$MODEL\" under [model]"
}

install_packages() {
    local missing=() package
    for package in "${APT_PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$package")
        fi
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        skip "packages ${APT_PACKAGES[*]} are installed"
        return
    fi
    step apt-get update
    step apt-get install --yes --no-install-recommends "${missing[@]}"
}

create_user() {
    if getent group "$SERVICE" >/dev/null; then
        skip "group $SERVICE exists"
    else
        step groupadd --system "$SERVICE"
    fi
    if getent passwd "$SERVICE" >/dev/null; then
        skip "user $SERVICE exists"
    else
        step useradd --system --gid "$SERVICE" --no-create-home --home-dir "$STATE_DIR" \
            --shell /usr/sbin/nologin --comment "edge-agent daemon" "$SERVICE"
    fi
    local user
    for user in "${ADD_USERS[@]}"; do
        if id -nG "$user" 2>/dev/null | tr ' ' '\n' | grep -qx "$SERVICE"; then
            skip "user $user is in group $SERVICE"
        else
            step usermod --append --groups "$SERVICE" "$user"
        fi
    done
}

# The extras the venv needs: the embedded model, and the MQTT bridge for --mqtt or a config
# that already has an [mqtt] section.
extras() {
    local wanted=()
    [[ $MODEL == default ]] && wanted+=(default-model)
    if [[ -n $MQTT_HOST ]] || { [[ -f $CONFIG ]] && grep -q '^\[mqtt\]' "$CONFIG"; }; then
        wanted+=(mqtt)
    fi
    local IFS=,
    [[ ${#wanted[@]} -eq 0 ]] || printf '[%s]' "${wanted[*]}"
}

# The checkout as a fresh clone has it, in $2: without what builds, venvs and tools leave in it
# (as .gitignore lists them). pip builds a source folder where it is: built in the checkout, it
# would leave root-owned build/ and *.egg-info there, and an earlier install's build/lib would
# ship modules the checkout no longer has.
copy_source() {
    mkdir -- "$2"
    tar -C "$1" --exclude=./.git --exclude=./.venv --exclude=./build --exclude='*.egg-info' \
        --exclude=__pycache__ --exclude=./.mypy_cache --exclude=./.pytest_cache \
        --exclude=./.ruff_cache --exclude=./.hypothesis -cf - . | tar -C "$2" -xf -
}

remove_build_dir() {
    if [[ -n $BUILD_DIR && -d $BUILD_DIR ]]; then
        rm -rf -- "$BUILD_DIR"
    fi
}

install_venv() {
    step install -d -m 0755 -o root -g root "$PREFIX" "$MODELS_DIR"
    if [[ -x $VENV/bin/python ]]; then
        skip "venv $VENV exists"
    else
        step "$SYSTEM_PYTHON" -m venv "$VENV"
    fi
    step "$VENV/bin/python" -m pip install --quiet --upgrade "pip>=24" "setuptools>=77"
    if [[ $DRY_RUN -eq 1 ]]; then
        BUILD_DIR=/tmp/edge-agent-build.XXXXXX
    else
        trap remove_build_dir EXIT
        BUILD_DIR=$(mktemp -d /tmp/edge-agent-build.XXXXXX)
    fi
    step copy_source "$SOURCE_DIR" "$BUILD_DIR/source"
    local target
    target=$BUILD_DIR/source$(extras)
    # A regular (non-editable) install: the service must not depend on the checkout staying put.
    # The first install compiles llama.cpp from source: expect it to take a while on a Pi.
    step "$VENV/bin/python" -m pip install --quiet --upgrade "$target"
    if [[ $DRY_RUN -eq 0 ]]; then
        remove_build_dir
    fi
    step ln -sfn "$VENV/bin/$SERVICE" "$CLIENT_LINK"
}

# Points [model] path in the config at $MODEL (the table systemd/config.example.toml documents).
set_model_path() {
    step sed -i -E "/^\[model\]/,/^\[/ s|^path *= *\".*\"|path = \"$MODEL\"|" "$CONFIG"
    if [[ $DRY_RUN -eq 0 ]] && ! grep -qxF "path = \"$MODEL\"" "$CONFIG"; then
        die "$CONFIG has no [model] path line to set; add: path = \"$MODEL\""
    fi
}

# Turns the bridge on: [mqtt] host = "$MQTT_HOST", in the section if there is one, else a new one.
set_mqtt_host() {
    if [[ -f $CONFIG ]] && grep -q '^\[mqtt\]' "$CONFIG"; then
        if sed -n -E '/^\[mqtt\]/,/^\[/ p' "$CONFIG" | grep -qE '^host *='; then
            step sed -i -E "/^\[mqtt\]/,/^\[/ s|^host *=.*|host = \"$MQTT_HOST\"|" "$CONFIG"
        else
            step sed -i -E "/^\[mqtt\]/ a host = \"$MQTT_HOST\"" "$CONFIG"
        fi
    else
        step sed -i -E "\$ a # The MQTT bridge (docs/mqtt.md), turned on by install.sh --mqtt.\\n[mqtt]\\nhost = \"$MQTT_HOST\"" "$CONFIG"
    fi
}

install_config() {
    local example=$SOURCE_DIR/systemd/config.example.toml
    step install -d -m 0755 -o root -g root "$CONFIG_DIR"
    if [[ -f $CONFIG ]]; then
        if [[ -n $MODEL_GIVEN ]]; then
            set_model_path
        elif [[ -z $MQTT_HOST ]]; then
            skip "$CONFIG exists; kept as it is"
        fi
    else
        step install -m 0644 -o root -g root "$example" "$CONFIG"
        set_model_path
    fi
    if [[ -n $MQTT_HOST ]]; then
        set_mqtt_host
    fi
}

# The drop-in that lets the service reach a broker beyond loopback, as docs/mqtt.md installs it.
install_mqtt_dropin() {
    if [[ -z $MQTT_HOST ]]; then
        return
    fi
    if [[ -z $MQTT_ADDRESSES ]]; then
        skip "the broker $MQTT_HOST is on loopback, which the unit allows: no drop-in needed"
        return
    fi
    step install -d -m 0755 -o root -g root "$DROPIN_DIR"
    step install -m 0644 -o root -g root "$SOURCE_DIR/systemd/$SERVICE.service.d/mqtt-broker.conf" "$MQTT_DROPIN"
    step sed -i -E "s|^IPAddressAllow=.*|IPAddressAllow=$MQTT_ADDRESSES|" "$MQTT_DROPIN"
}

install_unit() {
    local reinstall=0
    [[ -f $UNIT_PATH ]] && reinstall=1
    step install -m 0644 -o root -g root "$SOURCE_DIR/systemd/$SERVICE.service" "$UNIT_PATH"
    step systemd-analyze verify "$UNIT_PATH"
    step systemctl daemon-reload
    # Type=notify: this returns once the model is loaded and warmed up (READY=1), or fails.
    step systemctl enable --now "$SERVICE.service"
    if [[ $reinstall -eq 1 ]]; then
        # A running service keeps the old code and unit until it restarts.
        step systemctl try-restart "$SERVICE.service"
    fi
    printf 'edge-agent %s. Check it with: systemctl status %s; journalctl -u %s\n' \
        "$([[ $DRY_RUN -eq 1 ]] && echo 'would be started' || echo 'is started')" "$SERVICE" "$SERVICE"
}

uninstall() {
    if [[ -f $UNIT_PATH ]]; then
        step systemctl disable --now "$SERVICE.service"
        step rm -f "$UNIT_PATH"
        step systemctl daemon-reload
    else
        skip "no unit at $UNIT_PATH"
    fi
    if [[ -L $CLIENT_LINK && $(readlink "$CLIENT_LINK") == "$VENV/bin/$SERVICE" ]]; then
        step rm -f "$CLIENT_LINK"
    fi
    if [[ -d $VENV ]]; then
        step rm -rf "$VENV"
    else
        skip "no venv at $VENV"
    fi
    if [[ $PURGE -eq 0 ]]; then
        printf 'kept %s, %s, %s, %s and the user %s (add --purge to remove them)\n' \
            "$CONFIG_DIR" "$STATE_DIR" "$CACHE_DIR" "$MODELS_DIR" "$SERVICE"
        return
    fi
    step rm -rf "$CONFIG_DIR" "$STATE_DIR" "$CACHE_DIR" "$MODELS_DIR"
    if [[ -d $DROPIN_DIR ]]; then
        step rm -rf "$DROPIN_DIR"
    fi
    if [[ -d $PREFIX ]]; then
        step rmdir --ignore-fail-on-non-empty "$PREFIX"
    fi
    if getent passwd "$SERVICE" >/dev/null; then
        step userdel "$SERVICE"
    else
        skip "no user $SERVICE"
    fi
    if getent group "$SERVICE" >/dev/null; then
        step groupdel "$SERVICE"
    else
        skip "no group $SERVICE"
    fi
}

main() {
    parse_args "$@"
    MODEL_GIVEN=$MODEL
    require_root
    if [[ $DRY_RUN -eq 1 ]]; then
        printf 'dry run: nothing below is done\n'
    fi
    if [[ $UNINSTALL -eq 1 ]]; then
        uninstall
        return
    fi
    # Checks first: nothing below them changes anything until all have passed.
    check_users
    check_source
    choose_model
    check_model
    check_model_access
    check_python
    check_mqtt
    check_config
    install_packages
    create_user
    install_venv
    install_config
    install_mqtt_dropin
    install_unit
    if [[ -n $NOT_READY ]]; then
        die "dry run: $NOT_READY"
    fi
}

main "$@"
