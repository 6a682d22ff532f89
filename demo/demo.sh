#!/usr/bin/env bash
# The kwrec demo (`make demo`), in two parts.
#
# Part 1 needs only bin/kwrec: it replays demo/example.kwrec.zst, a cassette
# recorded from the real control plane with a 410 Expired stored in its
# header, through kwrec show, kwrec replay and kwrec serve with kubectl.
#
# Part 2 builds the control plane if it is not cached (minutes), records
# ConfigMaps from it while a script changes them, stops it, then replays the
# cassette offline, once as recorded and once with an injected 410 Expired
# that the watcher recovers from.
#
# `demo/demo.sh --record-example` re-records demo/example.kwrec.zst with the
# same recording as part 2 (see record_example).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin=bin
out="$bin/demo"
mkdir -p "$out"
kwrec="$bin/kwrec"
example=demo/example.kwrec.zst
# cleanup stops the background processes this script started and has not
# waited for yet (jobs -p: a process waited for is no longer listed).
cleanup() {
	local pid
	for pid in $(jobs -p); do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# start PATTERN LOG COMMAND...: run COMMAND in the background, its stdout and
# stderr copied to LOG (a file, or - for this script's stdout), and return
# once one of its lines matches PATTERN: the line COMMAND prints when it is
# ready, waited on rather than slept for. COMMAND's pid is left in $started,
# the copier's in $copier (wait for both to see all of LOG). If COMMAND ends
# before such a line, the script shows LOG and stops.
start() {
	local pattern=$1 log=$2 fifo="$out/.start.$$" from to line
	shift 2
	rm -f "$fifo"
	mkfifo "$fifo"
	"$@" >"$fifo" 2>&1 &
	started=$!
	exec {from}<"$fifo"
	rm -f "$fifo"
	if [[ $log == - ]]; then exec {to}>&1; else exec {to}>"$log"; fi
	while IFS= read -r line <&"$from"; do
		printf '%s\n' "$line" >&"$to"
		if [[ $line =~ $pattern ]]; then
			cat <&"$from" >&"$to" &
			copier=$!
			exec {from}<&- {to}>&-
			return
		fi
	done
	exec {from}<&- {to}>&-
	[[ $log == - ]] || cat "$log"
	echo "demo: $1 ended before it printed a line matching $pattern" >&2
	exit 1
}

# controlplane_name DIR: "kube-apiserver v1.37.2 and etcd v3.7.0" from the
# directory controlplane/build.sh names.
controlplane_name() {
	basename "$1" | sed -E 's/_[^_]*$//; s/-(v[0-9])/ \1/g; s/_/ and /'
}

# start_controlplane KUBECONFIG: start the control plane at
# $KUBEBUILDER_ASSETS, its admin kubeconfig written to KUBECONFIG; its pid is
# left in $cp_pid.
start_controlplane() {
	go build -o "$bin/kwrec-controlplane" ./internal/testkit/cmd/controlplane
	start '^ready$' "$out/controlplane.log" "$bin/kwrec-controlplane" -kubeconfig-out "$1"
	cp_pid=$started
}

stop() { # stop PID: stop a process started by start.
	kill "$1"
	wait "$1" 2>/dev/null || true
}

# record_configmaps KUBECONFIG CASSETTE: record ConfigMaps in namespace
# default for 6 seconds while kubectl creates, updates and deletes some.
record_configmaps() {
	local kc=$1 cassette=$2 rec rec_out
	echo "\$ kwrec record configmaps -n default --duration 6s -o $cassette"
	start 'is recorded; watching$' - "$kwrec" record configmaps --kubeconfig "$kc" -n default --duration 6s -o "$cassette" --label scenario=demo
	rec=$started rec_out=$copier
	# The pauses spread the events over the recording, so that the timeline
	# and a replay at --speed 1 show them one by one.
	k() { echo "\$ kubectl $*"; kubectl --kubeconfig "$kc" -n default "$@" >/dev/null; sleep 0.4; }
	k create configmap alpha --from-literal=color=red
	k create configmap beta --from-literal=color=green
	k patch configmap alpha -p '{"data":{"color":"blue"}}'
	k delete configmap beta
	k create configmap gamma --from-literal=color=yellow
	wait "$rec"
	wait "$rec_out"
}

# watcher_watch CASSETTE: the #N (kwrec show) of the watcher's watch, the one
# with bookmarks (kwrec record also records discovery and kubectl's Table
# form).
watcher_watch() {
	"$kwrec" show "$1" | awk '!id && /allowWatchBookmarks=true.*watch=true/ {
		match($0, /#[0-9]+/); id = substr($0, RSTART + 1, RLENGTH - 1) } END { print id }'
}

# replay_410 CASSETTE: kwrec replay of a cassette whose header holds a 410
# after the first watch event.
replay_410() {
	"$kwrec" replay "$1"
	echo
	echo "The watcher saw the 410, re-listed (answered from the recorded timeline)"
	echo "and resumed with the next recorded event: nothing lost, nothing duplicated."
}

# kubectl_watch CASSETTE: serve CASSETTE at ten times its speed and watch its
# ConfigMaps with kubectl through the served kubeconfig, on the consumption
# clock: kubectl's watch is paced from its own start, so it meets the
# edit's point however late it joins.
kubectl_watch() {
	local kc="$out/replay.kubeconfig"
	echo "\$ kwrec serve $1 --speed 10 --clock consumption --kubeconfig-out $kc &"
	start '^kubeconfig:' "$out/serve.log" "$kwrec" serve "$1" --speed 10 --clock consumption --kubeconfig-out "$kc"
	echo "\$ kubectl get configmaps -w --output-watch-events"
	kubectl --kubeconfig "$kc" --cache-dir "$out/kubectl-cache" get configmaps -w --output-watch-events --request-timeout 10s || true
	stop "$started"
	echo
	echo "kubectl asked its own way (no bookmarks, its own Accept for server-side"
	echo "printing) and still met the 410 where the edit put it, once."
}

# world_clock CASSETTE: serve CASSETTE paused at its start on the world
# clock, which every client shares, and read the same ConfigMaps with
# kubectl at the start, just after the change with resourceVersion 215
# (the example's second ConfigMap created) and at the end, as kwrec ctl
# moves the world.
world_clock() {
	local kc="$out/world.kubeconfig"
	echo "\$ kwrec serve $1 --paused --kubeconfig-out $kc &"
	start '^world clock at' "$out/world.log" "$kwrec" serve "$1" --paused --kubeconfig-out "$kc"
	kget() { echo "\$ kubectl get configmaps -o custom-columns=NAME:.metadata.name,COLOR:.data.color"; kubectl --kubeconfig "$kc" --cache-dir "$out/kubectl-cache" get configmaps -o custom-columns=NAME:.metadata.name,COLOR:.data.color; }
	echo "\$ kwrec ctl now"
	"$kwrec" ctl --kubeconfig "$kc" now
	kget
	echo "\$ kwrec ctl seek rv=215"
	"$kwrec" ctl --kubeconfig "$kc" seek rv=215
	kget
	echo "\$ kwrec ctl seek end"
	"$kwrec" ctl --kubeconfig "$kc" seek end
	kget
	stop "$started"
	echo
	echo "No watch was open: a kubectl get shows the cluster as it was at the world's"
	echo "time, which kwrec ctl plays, pauses and seeks (an RFC 3339 time, rv=N, end)."
}

offline_example() {
	step "Part 1, offline: $example ($(wc -c <"$example" | awk '{ printf "%.1f KB", $1 / 1000 }')), recorded earlier from a real control plane"
	echo "kwrec record configmaps recorded it while kubectl changed ConfigMaps;"
	echo "kwrec inject stored a 410 Expired on its recorded watch, in its header."

	step "1. The cassette as a timeline (kwrec show): the stored edit first, with its point"
	"$kwrec" show "$example"

	step "2. Replay it through the watcher (kwrec replay)"
	replay_410 "$example"

	step "3. Any client crosses the same point: kubectl through kwrec serve"
	kubectl_watch "$example"

	step "4. The cluster at a moment: kwrec serve's world clock, moved by kwrec ctl"
	world_clock "$example"
}

# controlplane: say whether the control plane is cached, build it if not, and
# export KUBEBUILDER_ASSETS.
controlplane() {
	local dir
	if dir=$(controlplane/build.sh --cached); then
		step "Part 2, live: the control plane, $(controlplane_name "$dir"), is cached"
	else
		step "Part 2, live: building the control plane, $(controlplane_name "$dir"), from the Go module proxy"
		echo "This takes about 7 minutes on 2 cores (this machine has $(nproc)) and about 3 GB"
		echo "of memory, once: it is cached in $dir."
	fi
	KUBEBUILDER_ASSETS=$(controlplane/build.sh | tail -n 1)
	export KUBEBUILDER_ASSETS
}

live() {
	local cassette="$out/configmaps.kwrec.zst" kc="$out/kubeconfig" watch_id

	step "5. Start a real control plane: $(controlplane_name "$KUBEBUILDER_ASSETS")"
	start_controlplane "$kc"
	kubectl --kubeconfig "$kc" version 2>/dev/null | grep -i server || true

	step "6. Record ConfigMaps in namespace default while a script creates, updates and deletes some"
	record_configmaps "$kc" "$cassette"

	step "7. Stop the control plane: everything from here on is offline"
	stop "$cp_pid"
	echo "control plane stopped"

	step "8. The cassette as a timeline (kwrec show)"
	"$kwrec" show "$cassette"
	"$kwrec" lint "$cassette" && echo "kwrec lint: ok"

	step "9. Replay it offline through the watcher (kwrec replay)"
	"$kwrec" replay "$cassette"

	step "10. Replay with a 410 Expired injected after the first watch event"
	watch_id=$(watcher_watch "$cassette")
	echo "\$ kwrec inject $cassette -o $out/configmaps-410.kwrec.zst --watch-error request=$watch_id,after=1,code=410"
	"$kwrec" inject "$cassette" -o "$out/configmaps-410.kwrec.zst" --watch-error "request=$watch_id,after=1,code=410"
	replay_410 "$out/configmaps-410.kwrec.zst"

	step "11. Any client crosses the same point: kubectl through kwrec serve"
	kubectl_watch "$out/configmaps-410.kwrec.zst"
	echo "Cassettes are in $out."
}

# record_example writes demo/example.kwrec.zst: part 2's recording, without
# the OpenAPI v3 documents kwrec record also records (1.6 MB of JSON, 110 KB
# compressed; kwrec serve answers /openapi/v3 from its built-in copy of the
# same server's), the other interactions renumbered in order, and with a 410
# Expired after the first event of the watcher's watch stored in its header.
record_example() {
	local recorded="$out/example-recorded.kwrec.zst" text="$out/example.kwrec" kc="$out/kubeconfig" watch_id
	KUBEBUILDER_ASSETS=$(controlplane/build.sh | tail -n 1)
	export KUBEBUILDER_ASSETS
	start_controlplane "$kc"
	record_configmaps "$kc" "$recorded"
	stop "$cp_pid"
	"$kwrec" cat "$recorded" | awk '
		match($0, /^\{"(request|response|frame|end)":[0-9]+,/) {
			head = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
			key = head; sub(/^\{"/, "", key); sub(/".*/, "", key)
			n = head; gsub(/[^0-9]/, "", n)
			if (key == "request") {
				if (rest ~ /"url":"[^"]*\/openapi\/v3/) dropped[n] = 1
				else id[n] = ++last
			}
			if (n in dropped) next
			printf "{\"%s\":%d,%s\n", key, id[n], rest
			next
		}
		{ print }' >"$text"
	watch_id=$(watcher_watch "$text")
	"$kwrec" inject "$text" -o "$example" --watch-error "request=$watch_id,after=1,code=410"
	"$kwrec" lint "$example" && echo "kwrec lint: ok"
}

case "${1:-}" in
"")
	offline_example
	controlplane
	live
	;;
--record-example) record_example ;;
*)
	echo "usage: demo/demo.sh [--record-example]" >&2
	exit 2
	;;
esac
