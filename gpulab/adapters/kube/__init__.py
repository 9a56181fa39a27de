"""`KubeGateway` over the official kubernetes client: one `ApiClient` per API server.

Every call goes through `ApiClient.call_api` on REST paths derived from apiVersion/kind, not
through `DynamicClient`: its list results need `kind` on the response (kmock omits it) and its
discovery fetches every API group up front. Kinds gpulab touches are in `_KNOWN`; anything
else (e.g. Calico's CRs) is looked up once in the group/version's discovery document.

Errors leave this module as `AdapterError` with one line: verb, object, API server, HTTP status
and the Status reason/message. Transient failures (409 outside create, 429, 5xx, connection
errors) are retried a bounded number of times (`RetryPolicy`), and nowhere else.

Every request has one deadline, `request_timeout` (kubectl's `--request-timeout`), from sending it
to the last byte of its answer. urllib3's own timeouts do not give that: `Timeout(total=...)` is
spent on connecting and then bounds each socket read of the headers (urllib3 2.8
util/timeout.py:262-273), and the body is read under that per-read bound too, so a body that
trickles a byte per read never trips it. The body is therefore read here, one `read1` at a
time, each read allowed only what is left of the deadline (`_read_body`). And urllib3 retries by
itself: kubernetes 37's `RESTClientObject` passes `Configuration.retries` to its PoolManager only
when it is set (kubernetes/client/rest.py:155-156), and a pool without it uses `Retry.DEFAULT`,
three more attempts (urllib3 connectionpool.py:201-202, util/retry.py:569), which turned one
stalled read into four. Each client sets `retries = False` (`_no_hidden_retries`). `bounded`
caps every request made inside it by one total deadline (discovery's).

The adapter's modules: `client` (KubeClient: each request, its deadline and retries, discovery,
and the verbs), `errors` (KubeApiError and the one-line texts), `retries` (RetryPolicy and the
body read under the deadline), `resources` (kinds' REST paths, content types, JSON patch
pointers), `selectors` (label selectors), `port_forward` (a forwarded port's socket),
`exec_plugin` (a deadline for a kubeconfig's exec credential plugin).
"""


from __future__ import annotations

import logging

from gpulab.adapters.kube.client import KubeClient
from gpulab.adapters.kube.errors import KubeApiError
from gpulab.adapters.kube.resources import (
    APPLY_PATCH,
    FIELD_MANAGER,
    JSON,
    JSON_PATCH,
    MERGE_PATCH,
)
from gpulab.adapters.kube.retries import RetryPolicy
from gpulab.adapters.kube.selectors import label_selector_matches

__all__ = [
    "APPLY_PATCH",
    "FIELD_MANAGER",
    "JSON",
    "JSON_PATCH",
    "MERGE_PATCH",
    "KubeApiError",
    "KubeClient",
    "RetryPolicy",
    "label_selector_matches",
    "log",
]

log = logging.getLogger(__name__)  # the logger of every module here (cli shows its retries)
