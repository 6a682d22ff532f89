#!/usr/bin/env bash
# The kwrec demo (`make demo`): record ConfigMaps from a real control plane
# while a script changes them, stop the control plane, then replay the
# cassette offline, once as recorded and once with an injected 410 Expired
# that the watcher recovers from.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="$root/bin"
out="$bin/demo"
mkdir -p "$out"
kwrec="$bin/kwrec"
cassette="$out/configmaps.kwrec.zst"
kc="$out/kubeconfig"
cp_pid=""

cleanup() {
	if [[ -n "$cp_pid" ]] && kill -0 "$cp_pid" 2>/dev/null; then
		kill "$cp_pid" 2>/dev/null || true
		wait "$cp_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "1. Start a real control plane: kube-apiserver $(basename "$KUBEBUILDER_ASSETS" | sed 's/_/ and /; s/-/ /g')"
go build -o "$bin/kwrec-controlplane" "$root/internal/cmd/controlplane"
"$bin/kwrec-controlplane" -kubeconfig-out "$kc" >"$out/controlplane.log" 2>&1 &
cp_pid=$!
for _ in $(seq 1 120); do
	grep -q '^ready$' "$out/controlplane.log" 2>/dev/null && break
	kill -0 "$cp_pid" 2>/dev/null || { cat "$out/controlplane.log"; exit 1; }
	sleep 0.5
done
grep -q '^ready$' "$out/controlplane.log" || { echo "the control plane did not start:"; cat "$out/controlplane.log"; exit 1; }
kubectl --kubeconfig "$kc" version 2>/dev/null | grep -i server || true

step "2. Record ConfigMaps in namespace default while a script creates, updates and deletes some"
echo "\$ kwrec record configmaps -n default --duration 6s -o $cassette"
"$kwrec" record configmaps --kubeconfig "$kc" -n default --duration 6s -o "$cassette" --label scenario=demo &
rec_pid=$!
sleep 1.5
k() { echo "\$ kubectl $*"; kubectl --kubeconfig "$kc" -n default "$@" >/dev/null; sleep 0.4; }
k create configmap alpha --from-literal=color=red
k create configmap beta --from-literal=color=green
k patch configmap alpha -p '{"data":{"color":"blue"}}'
k delete configmap beta
k create configmap gamma --from-literal=color=yellow
wait "$rec_pid"

step "3. Stop the control plane: everything from here on is offline"
kill "$cp_pid"; wait "$cp_pid" 2>/dev/null || true; cp_pid=""
echo "control plane stopped"

step "4. The cassette as a timeline (kwrec show)"
"$kwrec" show "$cassette"
"$kwrec" lint "$cassette" && echo "kwrec lint: ok"

step "5. Replay it offline through the watcher (kwrec replay)"
"$kwrec" replay "$cassette"

step "6. Replay with a 410 Expired injected after the first watch event"
# The watcher's watch is the one with bookmarks (kwrec record also records
# discovery and kubectl's Table form): its #N in kwrec show.
timeline=$("$kwrec" show "$cassette")
watch_id=$(grep -m1 'allowWatchBookmarks=true.*watch=true' <<<"$timeline" | sed -E 's/.*#([0-9]+) .*/\1/')
echo "\$ kwrec inject $cassette -o $out/configmaps-410.kwrec.zst --watch-error request=$watch_id,after=1,code=410"
"$kwrec" inject "$cassette" -o "$out/configmaps-410.kwrec.zst" --watch-error "request=$watch_id,after=1,code=410"
"$kwrec" replay "$out/configmaps-410.kwrec.zst"
echo
echo "The watcher saw the 410, re-listed (answered from the recorded timeline)"
echo "and resumed with the next recorded event: nothing lost, nothing duplicated."

step "7. Any client crosses the same point: kubectl through kwrec serve"
echo "\$ kwrec serve $out/configmaps-410.kwrec.zst --speed 10 --kubeconfig-out $out/replay.kubeconfig &"
"$kwrec" serve "$out/configmaps-410.kwrec.zst" --speed 10 --kubeconfig-out "$out/replay.kubeconfig" > "$out/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 50); do grep -q '^kubeconfig:' "$out/serve.log" 2>/dev/null && break; sleep 0.1; done
echo "\$ kubectl get configmaps -w --output-watch-events"
kubectl --kubeconfig "$out/replay.kubeconfig" --cache-dir "$out/kubectl-cache" get configmaps -w --output-watch-events --request-timeout 10s || true
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
echo
echo "kubectl asked its own way (no bookmarks, its own Accept for server-side"
echo "printing) and still met the 410 where the edit put it, once. Cassettes are"
echo "in $out."
