"""What the two SDK-backed providers share: the credential, one HTTP client per call in flight,
cancellation that really stops a blocked read, the bounded body reader, the SSE parser and the
mapping of transport failures to upstream's classified errors.

Neither SDK is imported here: the providers pass their exception classes in, so this module
only knows ``httpx2`` (the HTTP client both SDKs are built on), and only when a call is made.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from tavernlab.cancel import CancelToken
from tavernlab.models._errors import (
    ModelCallError,
    ModelCancelled,
    invalid_response,
    network_error,
    status_error,
)

T = TypeVar("T")

#: The largest answer a provider reads (bytes of the decoded body); past it the call fails.
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
#: How much of a non-JSON error body an error message quotes.
BODY_PREVIEW_CHARS = 512

#: What upstream says for each transport failure (the message after the code).
NETWORK_MESSAGES: dict[str, str] = {
    "network.timeout": "The request timed out before the target service responded.",
    "network.connect_failed": "Could not connect to the target service.",
    "network.proxy_failed": "Could not connect through the configured proxy.",
    "network.dns_failed": "Could not find the target service address.",
    "network.tls_failed": "Could not establish a secure connection.",
    "network.body_interrupted": "The response was interrupted while it was being read.",
    "network.request_failed": "Network request failed.",
}


def read_api_key(env: str | None, provider: str) -> str:
    """The API key from the variable ``env`` names, read now (``env=None``: the provider needs
    no key, and a placeholder is sent). A missing or blank variable raises
    ``model.credentials_missing`` naming the variable; the key itself is never put in a
    message."""
    if env is None:
        return "tavernlab-no-key"
    value = os.environ.get(env, "")
    if not value.strip():
        raise ModelCallError(
            "model.credentials_missing",
            f"the {provider} provider reads its API key from the environment variable "
            f"`{env}`, which is not set; set `{env}` (or choose another variable with "
            f"api_key_env=...) and run again", kind="unauthorized", env=env)
    return value.strip()


def scrub_key(error: ModelCallError, key: str) -> ModelCallError:
    """``error`` with the API key masked out of its message (a server may echo it)."""
    if len(key) < 4 or key not in error.message:
        return error
    return ModelCallError(error.code, error.detail.replace(key, "***"), kind=error.kind,
                          status=error.status)


def sanitize_endpoint(url: str) -> str:
    """``url`` without credentials, query or fragment (safe to show)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def transport_error(code: str, endpoint: str | None) -> ModelCallError:
    """The classified transport failure ``code`` as upstream words it."""
    message = NETWORK_MESSAGES.get(code, "Upstream request failed.")
    return network_error(code, f"{message} ({endpoint})" if endpoint else message)


def _chain_text(error: BaseException) -> str:
    parts, seen = [], set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__}: {current}")
        current = current.__cause__ or current.__context__
    return "\n".join(parts).lower()


def classify_transport(error: BaseException, *, body: bool) -> str:
    """Upstream's network code for an ``httpx2`` failure (``body``: it broke while the answer
    was being read)."""
    import httpx2

    text = _chain_text(error)
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if any(isinstance(e, (httpx2.TimeoutException, TimeoutError, socket.timeout)) for e in chain):
        return "network.timeout"
    if any(isinstance(e, httpx2.ProxyError) for e in chain):
        return "network.proxy_failed"
    if any(isinstance(e, httpx2.ConnectError) for e in chain):
        if "proxy" in text or "socks" in text:
            return "network.proxy_failed"
        if any(isinstance(e, socket.gaierror) for e in chain) or any(
                signal in text for signal in ("name or service not known", "nodename",
                                              "name resolution", "getaddrinfo", "dns")):
            return "network.dns_failed"
        if any(signal in text for signal in ("ssl", "tls", "certificate")):
            return "network.tls_failed"
        return "network.connect_failed"
    if body:
        return "network.body_interrupted"
    return "network.request_failed"


def status_failure(provider: str, status: int, body: Any, fallback: str) -> ModelCallError:
    """The classified error of an HTTP error status, with the provider's own message."""
    message = error_message(body) or fallback
    if status in (400, 401, 403):
        return status_error(status, message)
    return status_error(status, f"{provider} endpoint failed with status {status}: {message}")


def error_message(body: Any) -> str | None:
    """The message of a provider's error JSON (``{"error": {"message": …}}`` and its kin),
    ``None`` when ``body`` carries no error."""
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if error is None or error is False:
        detail = body.get("detail")
        error = detail.get("error") if isinstance(detail, dict) else None
        if error is None or error is False:
            return None
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        for key in ("message", "code", "type"):
            value = error.get(key)
            if value is not None:
                return value if isinstance(value, str) else json.dumps(value)
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return json.dumps(error, ensure_ascii=False)


def provider_error(provider: str, body: Any) -> ModelCallError | None:
    """A provider-declared error inside a successful (HTTP 200) answer, or ``None``.

    An error that names an HTTP status (``{"error": {"code": 429}}``, as OpenRouter sends) is
    classified as that status; any other is upstream's invalid-data error."""
    message = error_message(body)
    if message is None:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        for key in ("status", "code"):
            value = error.get(key)
            if isinstance(value, int) and 400 <= value <= 599:
                return status_failure(provider, value, body, message)
    return ModelCallError("agent.validation_error", f"{provider}: {message}", kind="invalid_data")


# --- one HTTP client per call in flight ----------------------------------------------------

@dataclass
class _Lease:
    http: Any  # httpx2.Client
    stream: Any = None  # the response's network stream, once there is one
    aborted: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def abort(self) -> None:
        """Shut down every socket of this client (wakes a read blocked in another thread)."""
        with self.lock:
            self.aborted = True
            streams = [self.stream] if self.stream is not None else []
        streams += _pool_streams(self.http)
        for stream in streams:
            sock = None
            with contextlib.suppress(Exception):
                sock = stream.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _pool_streams(http: Any) -> list[Any]:
    """The network streams of the connections ``http``'s pool holds (best effort: the pool's
    layout is the HTTP library's own)."""
    found = []
    pool = getattr(getattr(http, "_transport", None), "_pool", None)
    for connection in list(getattr(pool, "connections", None) or []):
        inner = getattr(connection, "_connection", None)
        stream = getattr(inner, "_network_stream", None)
        if stream is not None:
            found.append(stream)
    return found


class ClientPool:
    """Idle ``httpx2`` clients, one lent to each call in flight, so that cancelling a call
    shuts down that call's sockets only. An aborted client is closed, never lent again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._closed = False

    @contextlib.contextmanager
    def lease(self, cancel: CancelToken) -> Iterator[_Lease]:
        """A client for one call; ``cancel`` aborts its sockets while it is lent."""
        import httpx2

        with self._lock:
            http = self._idle.pop() if self._idle else None
        if http is None:
            http = httpx2.Client(follow_redirects=True)
        lease = _Lease(http)
        unregister = cancel.on_cancel(lease.abort)
        try:
            yield lease
        finally:
            unregister()
            with self._lock:
                keep = not lease.aborted and not self._closed and not cancel.cancelled
                if keep:
                    self._idle.append(http)
            if not keep:
                http.close()

    def close(self) -> None:
        """Close the idle clients (a call in flight closes its own when it ends)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for http in idle:
            http.close()


# --- reading the answer --------------------------------------------------------------------

class BodyReader:
    """The answer's bytes, counted against :data:`MAX_RESPONSE_BYTES` and the call's deadline
    as they are read, with transport failures classified (``network.body_interrupted`` …) and
    cancellation turned into :class:`ModelCancelled`."""

    def __init__(self, response: Any, lease: _Lease, cancel: CancelToken, *, provider: str,
                 endpoint: str | None, deadline: float) -> None:
        self._response = response
        self._cancel = cancel
        self._provider = provider
        self._endpoint = endpoint
        self._deadline = deadline
        self.size = 0
        with lease.lock:
            with contextlib.suppress(Exception):
                lease.stream = response.extensions.get("network_stream")
            aborted = lease.aborted
        if aborted:
            lease.abort()

    def chunks(self) -> Iterator[bytes]:
        """The decoded body, piece by piece."""
        try:
            for chunk in self._response.iter_bytes():
                if self._cancel.cancelled:
                    raise ModelCancelled()
                self.size += len(chunk)
                if self.size > MAX_RESPONSE_BYTES:
                    raise invalid_response(
                        f"{self._provider} response is larger than 8 MiB "
                        f"({MAX_RESPONSE_BYTES} bytes); it was refused after reading "
                        f"{self.size} bytes")
                if time.monotonic() > self._deadline:
                    raise transport_error("network.timeout", self._endpoint)
                yield chunk
        except (ModelCancelled, ModelCallError):
            raise
        except Exception as error:
            if self._cancel.cancelled:
                raise ModelCancelled() from None
            if _is_transport(error):
                raise transport_error(classify_transport(error, body=True),
                                      self._endpoint) from None
            raise
        if self._cancel.cancelled:
            raise ModelCancelled()

    def read_all(self) -> bytes:
        """The whole (bounded) body."""
        return b"".join(self.chunks())


def _is_transport(error: BaseException) -> bool:
    import httpx2

    return isinstance(error, (httpx2.TransportError, httpx2.StreamError, OSError))


def parse_json_body(data: bytes, provider: str, status: int) -> Any:
    """The answer's JSON; an unreadable body is ``model.upstream_invalid_response``."""
    try:
        return json.loads(data)
    except ValueError as error:
        raise invalid_response(
            f"{provider} returned status {status} non-JSON body (generate): {error}") from None


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: its ``event`` name (``""`` when not given) and ``data``."""

    event: str
    data: str


def sse_events(chunks: Iterator[bytes], on_incomplete: Callable[[], Exception]
               ) -> Iterator[SseEvent]:
    """The events of an SSE body. A body that ends in the middle of an event raises
    ``on_incomplete()``."""
    buffer = b""
    data: list[bytes] = []
    name = b""
    for chunk in chunks:
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line, buffer = buffer[:end], buffer[end + 1:]
            if line.endswith(b"\r"):
                line = line[:-1]
            if not line:
                if data:
                    yield SseEvent(name.decode("utf-8", "replace"),
                                   b"\n".join(data).decode("utf-8", "replace"))
                data, name = [], b""
                continue
            if line.startswith(b":"):
                continue
            key, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if key == b"data":
                data.append(value)
            elif key == b"event":
                name = value
    if buffer.strip() or data:
        raise on_incomplete()


def json_event(event: SseEvent, provider: str) -> Any:
    """The JSON of one SSE event's data; unreadable data is ``model.upstream_invalid_response``."""
    try:
        return json.loads(event.data)
    except ValueError as error:
        raise invalid_response(
            f"{provider} sent a stream event that is not JSON: {error}") from None


def map_sdk_error(error: BaseException, *, provider: str, endpoint: str | None,
                  status_class: type[BaseException], timeout_class: type[BaseException],
                  connection_class: type[BaseException]) -> BaseException:
    """The classified error for an exception the SDK raised while sending the request."""
    if isinstance(error, status_class):
        response = getattr(error, "response", None)
        status = int(getattr(error, "status_code", 0) or getattr(response, "status_code", 0))
        body: Any = getattr(error, "body", None)
        text = ""
        with contextlib.suppress(Exception):
            text = str(response.text) if response is not None else ""
        with contextlib.suppress(ValueError):
            body = json.loads(text) if text.strip() else body
        if isinstance(body, dict) and error_message(body) is None \
                and isinstance(body.get("message"), str):
            body = {"error": body}  # the SDK hands over the inner error object
        fallback = text.strip()[:BODY_PREVIEW_CHARS] or f"HTTP {status}"
        return status_failure(provider, status, body, fallback)
    if isinstance(error, timeout_class):
        return transport_error("network.timeout", endpoint)
    if isinstance(error, connection_class):
        return transport_error(classify_transport(error, body=False), endpoint)
    if _is_transport(error):
        return transport_error(classify_transport(error, body=False), endpoint)
    return error


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes of one SDK: a status answer, a timeout, a failed connection."""

    status: type[BaseException]
    timeout: type[BaseException]
    connection: type[BaseException]


def exchange(pool: ClientPool, cancel: CancelToken, *, key: str, provider: str,
             endpoint: str, timeout_s: float, errors: SdkErrors,
             open_response: Callable[[Any], AbstractContextManager[Any]],
             read: Callable[[BodyReader, int], T]) -> T:
    """One request through an SDK: ``open_response(http_client)`` sends it (the SDK's
    streaming-response context), ``read(reader, status)`` reads the answer. Every failure
    comes out classified (or as :class:`ModelCancelled` once ``cancel`` is set), with the key
    masked out of its message."""
    deadline = time.monotonic() + timeout_s
    failure: BaseException | None = None
    result: T | None = None
    with pool.lease(cancel) as lease:
        try:
            with open_response(lease.http) as response:
                reader = BodyReader(response.http_response, lease, cancel, provider=provider,
                                    endpoint=endpoint, deadline=deadline)
                result = read(reader, int(response.status_code))
        except Exception as error:  # classified below, outside the handler
            failure = _classified(error, cancel, provider=provider, endpoint=endpoint,
                                  errors=errors, key=key)
    # Raised here, not in the handler, so that the SDK's exception (whose request carries the
    # key in its headers) is not chained to what the caller sees.
    if failure is not None:
        if isinstance(failure, (ModelCallError, ModelCancelled)):
            failure.__cause__ = failure.__context__ = None
        raise failure
    if cancel.cancelled:
        raise ModelCancelled()
    return result  # type: ignore[return-value]


def _classified(error: Exception, cancel: CancelToken, *, provider: str, endpoint: str,
                errors: SdkErrors, key: str) -> BaseException:
    if cancel.cancelled or isinstance(error, ModelCancelled):
        return ModelCancelled()
    if isinstance(error, ModelCallError):
        return scrub_key(error, key)
    mapped = map_sdk_error(error, provider=provider, endpoint=endpoint,
                           status_class=errors.status, timeout_class=errors.timeout,
                           connection_class=errors.connection)
    return scrub_key(mapped, key) if isinstance(mapped, ModelCallError) else mapped


class SdkProvider:
    """What the two SDK-backed providers share: the configured model, endpoint, credential
    variable and parameters, how they are described (the variable's name, never the key), and
    the pool of HTTP connections they reuse. Subclasses set ``provider_format`` and
    implement ``generate``."""

    provider_format = ""

    def __init__(self, model: str, *, base_url: str | None, api_key_env: str | None,
                 params: Mapping[str, Any] | None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"{type(self).__name__} needs a model name")
        self._model = model
        self._base_url = base_url
        self._api_key_env = api_key_env
        self._params = dict(params or {})
        self._pool = ClientPool()

    @property
    def model_id(self) -> str:
        """The configured model name."""
        return self._model

    def describe(self) -> dict[str, Any]:
        """``{provider, model, baseUrl?, apiKeyEnv?, params?}`` (the variable's name, never
        the key)."""
        out: dict[str, Any] = {"provider": self.provider_format, "model": self._model}
        if self._base_url is not None:
            out["baseUrl"] = self._base_url
        if self._api_key_env is not None:
            out["apiKeyEnv"] = self._api_key_env
        if self._params:
            out["params"] = dict(self._params)
        return out

    def close(self) -> None:
        """Close the idle HTTP connections."""
        self._pool.close()

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self._model!r}, base_url={self._base_url!r}, "
                f"api_key_env={self._api_key_env!r})")
