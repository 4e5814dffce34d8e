"""Bearer tokens: the interceptor that checks them on RPCs (and the check /metrics shares)."""
from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import grpc

if TYPE_CHECKING:
    from ._metrics import Metrics

# Health checks stay open without a token, so load balancers and probes need no secret.
_AUTH_EXEMPT_PREFIXES = ("/grpc.health.v1.Health/",)


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """UNAUTHENTICATED unless the call carries `authorization: Bearer <token>` with an accepted token."""

    def __init__(self, tokens: Sequence[str], metrics: Metrics | None = None) -> None:
        self._tokens = [t.encode() for t in tokens]
        self._metrics = metrics

    def _accepts(self, value: str | None) -> bool:
        return bearer_accepted(self._tokens, value)

    async def intercept_service(self, continuation: Callable, handler_call_details: grpc.HandlerCallDetails) -> Any:
        method = handler_call_details.method
        handler = await continuation(handler_call_details)
        if method.startswith(_AUTH_EXEMPT_PREFIXES) or handler is None:
            return handler
        metadata = handler_call_details.invocation_metadata or ()
        values = [v for k, v in metadata if k == "authorization"]
        # Several entries are refused, not first-wins: a proxy adding its own must not decide
        # which one counts.
        if len(values) == 1 and self._accepts(values[0] if isinstance(values[0], str) else values[0].decode()):
            return handler
        if not values:
            message = "a bearer token is required: send metadata 'authorization: Bearer <token>'"
        elif len(values) > 1:
            message = (f"the call carries {len(values)} 'authorization' metadata entries; "
                       f"exactly one is allowed")
        else:
            message = "the bearer token is not accepted"
        if self._metrics is not None:
            self._metrics.requests.labels(method.rsplit("/", 1)[-1], "UNAUTHENTICATED").inc()
        return _denying_handler(handler, message)


def bearer_accepted(tokens: Sequence[bytes], value: str | None) -> bool:
    """Whether an authorization value is "Bearer <one of tokens>" (case-insensitive scheme)."""
    if not value or value[:7].lower() != "bearer ":
        return False
    presented = value[7:].strip().encode()
    ok = False
    for token in tokens:  # compare with every token, in constant time
        ok |= hmac.compare_digest(presented, token)
    return ok


def _denying_handler(handler: grpc.RpcMethodHandler, message: str) -> grpc.RpcMethodHandler:
    async def deny(request_or_iterator: Any, context: grpc.aio.ServicerContext) -> Any:
        await context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    # Same shape (streaming or not) as the real method, so the call is answered properly.
    make = {
        (False, False): grpc.unary_unary_rpc_method_handler,
        (False, True): grpc.unary_stream_rpc_method_handler,
        (True, False): grpc.stream_unary_rpc_method_handler,
        (True, True): grpc.stream_stream_rpc_method_handler,
    }[(handler.request_streaming, handler.response_streaming)]
    return make(deny, request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer)
