# Bash completion for memviz: commands, each command's options, their
# fixed values, and trace files (*.mvz) for the analysis commands. Installed
# by `make install` as $(PREFIX)/share/bash-completion/completions/memviz.

_memviz()
{
    local cur prev cmd
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        COMPREPLY=($(compgen -W "run report timeline diff export leaks retain growth snapshot inspect live ui html tui index callgraph help --version" -- "$cur"))
        return
    fi
    cmd=${COMP_WORDS[1]}
    case "$prev" in
    --by) COMPREPLY=($(compgen -W "stack function file module" -- "$cur")); return ;;
    --sort) COMPREPLY=($(compgen -W "peak leaked allocations bytes temporary" -- "$cur")); return ;;
    --cost) COMPREPLY=($(compgen -W "peak leaked allocations bytes temporary retained" -- "$cur")); return ;;
    --tree) COMPREPLY=($(compgen -W "top-down bottom-up" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "collapsed pprof massif callgrind speedscope chrome" -- "$cur")); return ;;
    --at) COMPREPLY=($(compgen -W "peak" -- "$cur")); return ;;
    --debug-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    -o | --output | --suppressions | --live-token | --token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --snapshot-on) COMPREPLY=($(compgen -W "USR1 USR2 HUP" -- "$cur")); return ;;
    --kinds) COMPREPLY=($(compgen -W "all definite indirect possible reachable" -- "$cur")); return ;;
    --sample | --max-size | --host | --port | --phase | --live | --live-window | --snapshot-every | --snapshot | --bytes | --base-snapshot | --new-snapshot | --site | --block | --top | --depth | --points | --height | --min-percent | --from | --to | --filter | --exclude) return ;;
    esac
    local opts
    case "$cmd" in
    run)
        # after the program, everything is the program's
        local i
        for ((i = 2; i < COMP_CWORD; i++)); do
            case "${COMP_WORDS[i]}" in
            -o | --depth | --snapshot-on | --snapshot-every | --live | --live-window | --live-token | --sample) ((i++)) ;;
            -*) ;;
            *) COMPREPLY=($(compgen -f -- "$cur")); return ;;
            esac
        done
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "-o --depth --no-follow --no-leak-scan --snapshot-on
                                     --snapshot-every --snapshot-contents --live --live-window
                                     --live-token --sample --addresses --callgraph --callgraph-filter --no-index --help --" -- "$cur"))
        else
            COMPREPLY=($(compgen -c -- "$cur"))
        fi
        return
        ;;
    report) opts="--json --top --all-sites --children --by --sort --tree --depth --min-percent --from --to --at --phase
                  --filter --exclude --suppressions --no-default-suppressions --histogram --threads
                  --debug-dir --help" ;;
    timeline) opts="--csv --json --points --top --height --from --to --debug-dir --help" ;;
    diff) opts="--json --top --sort --snapshots --base-snapshot --new-snapshot --debug-dir --help" ;;
    leaks) opts="--json --snapshot --kinds --top --verify --suppressions --no-default-suppressions
                 --debug-dir --help" ;;
    snapshot) return ;;
    retain) opts="--json --snapshot --top --site --block --debug-dir --help" ;;
    growth) opts="--json --top --by --debug-dir --help" ;;
    export) opts="--format --cost --from --to -o --depth --fold-recursion --min-percent --children
                  --snapshot --debug-dir --help" ;;
    inspect) opts="--json --snapshot --block --bytes --debug-dir --help" ;;
    live) opts="--token-file --help" ;;
    ui) opts="--host --port --token-file --live --live-token --debug-dir --help" ;;
    html) opts="-o --output --max-size --debug-dir --help" ;;
    index) opts="--debug-dir --help" ;;
    callgraph) opts="--json --function --depth --top --thread --debug-dir --help" ;;
    tui) opts="--debug-dir --help" ;;
    help) COMPREPLY=($(compgen -W "run report timeline diff export leaks retain growth snapshot inspect live ui html tui index callgraph" -- "$cur")); return ;;
    *) return ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -X '!*.mvz' -- "$cur") $(compgen -d -- "$cur"))
    fi
}
complete -F _memviz memviz
