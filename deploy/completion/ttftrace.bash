# SPDX-License-Identifier: GPL-2.0-only
# bash completion for ttftrace(8): the commands, each command's options, and values
# where they are known (PIDs, command names, files, fixed choices).
# tests/root/packaging checks that it offers every option of every command's --help.

_ttftrace_opts_trace="-p --pid --comm --port -c --cmd -d --duration -i --interval --json
	-o --output -v --verbose --slo --cost --profile --probe --no-profile --gpu-attach
	--grpc-profile --capture-bytes --capture-send-bytes --ringbuf-mb --no-sched --nice --drain-ms --no-hops --no-tls
	--net-source --metrics --buckets --otlp --perfetto --perfetto-sched --record --sysfs-root
	-? --help
	--usage -V --version"
_ttftrace_opts_pcie="-r --sysfs-root --proc-root -D --gpu -p --pid --busy --pstate --load
	-n --samples -i --interval-ms -j --json -h --help"
_ttftrace_opts_copybw="-d --device -s --sizes -n --iters -w --warmup --ramp-ms -m --memory
	--dir -r --sysfs-root --cudart -j --json -h --help"
_ttftrace_opts_replay="--json -o --output -v --verbose -q --quiet --grpc-profile --perfetto
	--perfetto-sched --metrics-out --otlp-out -h --help"
_ttftrace_opts_report="-o --output --slo --title -h --help"
_ttftrace_opts_gpu_attach="-p --pid --lib --sock --timeout-ms --wait-ms -h --help"

_ttftrace()
{
	local cur prev words cword cmd i opts
	_init_completion -s 2>/dev/null || {
		cur=${COMP_WORDS[COMP_CWORD]}
		prev=${COMP_WORDS[COMP_CWORD-1]}
		words=("${COMP_WORDS[@]}")
		cword=$COMP_CWORD
	}
	cmd=
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		pcie|copybw|replay|report|gpu-attach) cmd=${words[i]}; break ;;
		-*) ;;
		*) break ;;
		esac
	done

	case $prev in
	-p|--pid)
		COMPREPLY=($(compgen -W "$(ps -eo pid= 2>/dev/null)" -- "$cur")); return ;;
	--comm)
		COMPREPLY=($(compgen -W "$(ps -eo comm= 2>/dev/null | sort -u)" -- "$cur")); return ;;
	-o|--output|--record|--perfetto|--grpc-profile|--lib|--cudart|--metrics-out|--otlp-out)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--sysfs-root|--proc-root)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--profile)
		COMPREPLY=($(compgen -W "llamacpp" -f -- "$cur")); return ;;
	--net-source)
		COMPREPLY=($(compgen -W "auto sock syscall" -- "$cur")); return ;;
	--perfetto-sched)
		COMPREPLY=($(compgen -W "served all none" -- "$cur")); return ;;
	--load)
		COMPREPLY=($(compgen -W "copy" -- "$cur")); return ;;
	-m|--memory)
		[[ $cmd == copybw ]] && { COMPREPLY=($(compgen -W "pinned pageable both" -- "$cur")); return; } ;;
	--dir)
		COMPREPLY=($(compgen -W "h2d d2h both" -- "$cur")); return ;;
	-c|--cmd|--port|-d|--duration|-i|--interval|--slo|--probe|--capture-bytes|\
	--capture-send-bytes|--ringbuf-mb|--nice|--drain-ms|--metrics|--buckets|--otlp|--title|--sock|\
	--timeout-ms|--wait-ms|-s|--sizes|-n|--iters|--samples|-w|--warmup|--ramp-ms|\
	--interval-ms|--pstate|-D|--gpu|--device)
		return ;;
	esac

	case $cmd in
	"") opts=$_ttftrace_opts_trace
	    [[ $cur != -* ]] && { COMPREPLY=($(compgen -W "pcie copybw replay report gpu-attach" -- "$cur")); return; } ;;
	pcie) opts=$_ttftrace_opts_pcie ;;
	copybw) opts=$_ttftrace_opts_copybw ;;
	replay|report)
		[[ $cmd == replay ]] && opts=$_ttftrace_opts_replay || opts=$_ttftrace_opts_report
		[[ $cur != -* ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; } ;;
	gpu-attach) opts=$_ttftrace_opts_gpu_attach ;;
	esac
	COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _ttftrace ttftrace
