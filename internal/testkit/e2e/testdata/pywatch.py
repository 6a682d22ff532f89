#!/usr/bin/python3
"""List then watch ConfigMaps with python3-kubernetes, as a Python controller does.

Usage: pywatch.py KUBECONFIG NAMESPACE TIMEOUT_SECONDS

Lists, then watches from the list's resourceVersion with
watch.Watch().stream(..., timeout_seconds=TIMEOUT_SECONDS). A 410 (the watch
ERROR event Expired, raised as ApiException(410)) is counted and answered by
a re-list and a new watch; a 429 or 5xx on a list is counted and retried.
When a watch ends (its timeout) having brought no new event, it prints one
JSON object and exits 0:

  {"final": {name: resourceVersion}, "errors": [status, ...],
   "events": [[type, name, resourceVersion], ...]}
"""

import json
import sys
import time

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

RETRYABLE = (429, 500, 502, 503, 504)
MAX_ERRORS = 10


def main():
    kubeconfig, ns, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()
    errors = []
    events = []

    def relist():
        while True:
            try:
                cms = v1.list_namespaced_config_map(ns)
            except ApiException as e:
                errors.append(e.status)
                if e.status in RETRYABLE and len(errors) < MAX_ERRORS:
                    time.sleep(0.2)
                    continue
                raise
            state = {cm.metadata.name: cm.metadata.resource_version for cm in cms.items}
            return state, cms.metadata.resource_version

    state, rv = relist()
    while len(errors) < MAX_ERRORS:
        new = 0
        try:
            for ev in watch.Watch().stream(v1.list_namespaced_config_map, ns,
                                           resource_version=rv, timeout_seconds=timeout):
                meta = ev["object"].metadata
                rv = meta.resource_version
                if ev["type"] == "BOOKMARK":
                    continue
                new += 1
                events.append([ev["type"], meta.name, meta.resource_version])
                if ev["type"] == "DELETED":
                    state.pop(meta.name, None)
                else:
                    state[meta.name] = meta.resource_version
        except ApiException as e:
            errors.append(e.status)
            if e.status == 410:
                state, rv = relist()
                continue
            if e.status in RETRYABLE:
                time.sleep(0.2)
                continue
            raise
        if new == 0:
            break
    json.dump({"final": state, "errors": errors, "events": events}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
