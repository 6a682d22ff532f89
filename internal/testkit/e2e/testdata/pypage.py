#!/usr/bin/python3
"""List ConfigMaps page by page with python3-kubernetes, as a Python tool does.

Usage: pypage.py KUBECONFIG NAMESPACE LIMIT

Calls list_namespaced_config_map(limit=LIMIT, _continue=TOKEN) until the
answer carries no continue token, and prints one JSON object:

  {"items": {name: resourceVersion}, "pages": N,
   "remaining": [remainingItemCount of each page but the last]}

An ApiException is printed as {"error": status, "reason": reason,
"message": message} and the script exits 0, so the caller can compare it.
"""

import json
import sys

from kubernetes import client, config
from kubernetes.client.rest import ApiException


def main():
    kubeconfig, ns, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config.load_kube_config(config_file=kubeconfig)
    v1 = client.CoreV1Api()
    items, pages, remaining, token = {}, 0, [], None
    try:
        while True:
            kw = {"limit": limit}
            if token:
                kw["_continue"] = token
            page = v1.list_namespaced_config_map(ns, **kw)
            pages += 1
            for cm in page.items:
                items[cm.metadata.name] = cm.metadata.resource_version
            token = page.metadata._continue
            if not token:
                break
            remaining.append(page.metadata.remaining_item_count)
    except ApiException as e:
        body = json.loads(e.body) if e.body else {}
        print(json.dumps({"error": e.status, "reason": body.get("reason"), "message": body.get("message")}))
        return
    print(json.dumps({"items": items, "pages": pages, "remaining": remaining}))


if __name__ == "__main__":
    main()
