#!/usr/bin/python3
"""Watch the ConfigMaps of a label selection with python3-kubernetes.

Usage: pyselect.py KUBECONFIG NAMESPACE LABEL_SELECTOR COUNT

Lists the namespace's ConfigMaps with label_selector, prints the list's
resourceVersion on a line of its own, then watches from it with the same
selector (watch.Watch().stream) until COUNT events came, and prints them
as one JSON line: [[type, name, data.k], ...].
"""

import json
import sys

from kubernetes import client, config, watch


def main():
    kubeconfig, ns, selector, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()
    cms = v1.list_namespaced_config_map(ns, label_selector=selector)
    rv = cms.metadata.resource_version
    print(rv, flush=True)
    events = []
    for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns, label_selector=selector,
                                   resource_version=rv, timeout_seconds=60):
        if ev["type"] == "BOOKMARK":
            continue
        cm = ev["object"]
        events.append([ev["type"], cm.metadata.name, (cm.data or {}).get("k", "")])
        if len(events) == count:
            break
    print(json.dumps(events), flush=True)


if __name__ == "__main__":
    main()
