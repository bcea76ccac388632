#!/usr/bin/env bash
# Ask edge-agent one question and act on how it went: the pattern for cron jobs, systemd timers and
# Home Assistant shell_command. The exit code of `edge-agent ask` says what happened, so a script
# never has to parse an error message:
#   0 answered | 1 no answer (max iterations or retries) | 65 bad input
#   69 daemon unavailable | 75 busy or timed out | 130 interrupted (README.md, "Exit codes")
#
#   scripts/examples/ask-and-act.sh "Is the CPU hotter than 70 °C? Answer yes or no."
#
# EDGE_AGENT_ENDPOINT picks another daemon (default: your own `make run` daemon's socket, else the
# service's /run/edge-agent/agent.sock); EDGE_AGENT names the client binary (default: edge-agent on
# PATH, else the one `make run` uses in this checkout's .venv/bin).
set -uo pipefail

question=${1:-"Is the CPU hotter than 70 °C? Answer yes or no."}
client=${EDGE_AGENT:-edge-agent}
if [[ -z ${EDGE_AGENT:-} ]] && ! command -v edge-agent >/dev/null; then
    checkout_client="$(dirname "${BASH_SOURCE[0]}")/../../.venv/bin/edge-agent"
    if [[ -x $checkout_client ]]; then
        client=$checkout_client
    fi
fi
# 25 s leaves a cron job or a 60 s Home Assistant shell_command enough room to act afterwards.
ask=("$client" ask --timeout "${EDGE_AGENT_TIMEOUT:-25}")
if [[ -n ${EDGE_AGENT_ENDPOINT:-} ]]; then
    ask+=(--endpoint "$EDGE_AGENT_ENDPOINT")
fi

answer=$("${ask[@]}" "$question")
status=$?

case $status in
    0)
        printf 'answered: %s\n' "$answer"
        # Act on the answer: here, warn when the model says yes.
        if [[ ${answer,,} == yes* ]]; then
            printf 'action: the CPU is hot, warning the household\n'
        fi
        ;;
    1)
        printf 'no answer: the agent gave up; try a simpler question\n' >&2
        ;;
    65)
        printf 'bad input: the question was refused\n' >&2
        ;;
    69)
        printf 'daemon unavailable: is it running? systemctl status edge-agent\n' >&2
        ;;
    75)
        printf 'busy or timed out: try again later\n' >&2
        ;;
    127)
        # shellcheck disable=SC2016 # the command to type, printed as is
        printf 'edge-agent not found: put it on PATH (in a checkout: export PATH="$PWD/.venv/bin:$PATH") or set EDGE_AGENT\n' >&2
        ;;
    *)
        printf 'unexpected exit code %d from edge-agent ask\n' "$status" >&2
        ;;
esac
exit "$status"
