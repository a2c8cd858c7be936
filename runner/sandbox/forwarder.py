"""The in-sandbox forwarder: the sandbox's own loopback ports relayed to a gateway route's sockets.

A sandbox without the host's network (``isolation.network: gateway``) reaches the run's model
gateway only through the route's socket directory, mounted read-only at ``LINK_MOUNT``
(``Request.link``). This script is then the sandbox's first program, run by the base
interpreter in isolated mode with the standard library only: it binds ``127.0.0.1:MODEL_PORT``
(the port the agent's base URL names) and ``127.0.0.1:PROXY_PORT`` (its ``HTTPS_PROXY``),
leaves a detached child relaying every connection to ``model.sock`` / ``proxy.sock``, reports
"ready" on the launcher's pipe and execs the program. The child is reparented to the
sandbox's PID 1 and dies with the sandbox. The sockets are bound before the program starts,
so its first connection never races the relay (docs/security.md, "Network").

One process serves every connection (no process per connection, unlike ``socat fork``, so a
flood of connections costs the flooder file descriptors, not processes); each connection is
one connection to the route's socket, which the gateway counts against the trial's cap.
"""

import os
import socket
import sys

LINK_MOUNT = "/run/trialhouse"
"""Where a route's socket directory is mounted inside the sandbox."""
MODEL_SOCKET = "model.sock"
PROXY_SOCKET = "proxy.sock"
MODEL_PORT = 41000
"""The port of the agent's base URL on the sandbox's own loopback (``http://127.0.0.1:41000/t/…``)."""
PROXY_PORT = 41001
"""The port of the agent's ``HTTPS_PROXY``/``HTTP_PROXY`` on the sandbox's own loopback."""
CHUNK = 65536


def _listen(port):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(512)
    return sock


async def _pump(reader, writer):
    """Copy until EOF (then half-close the other side); an error ends both directions."""
    try:
        while True:
            data = await reader.read(CHUNK)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()
        raise


async def _relay(path, reader, writer):
    import asyncio

    try:
        up_reader, up_writer = await asyncio.open_unix_connection(path)
    except OSError:
        writer.close()
        return
    try:
        await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
    except (OSError, RuntimeError):
        pass
    finally:
        up_writer.close()
        writer.close()


async def _serve(pairs):
    import asyncio
    from functools import partial

    servers = [await asyncio.start_server(partial(_relay, path), sock=sock) for sock, path in pairs]
    await asyncio.Event().wait()
    del servers


def _detach_and_serve(pairs, ready_fd):
    """In a grandchild (reparented to the sandbox's PID 1): serve until the sandbox ends."""
    os.close(ready_fd)
    os.setsid()
    if os.fork():
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    try:
        import asyncio

        asyncio.run(_serve(pairs))
    finally:
        os._exit(0)


def main(argv):
    ready_fd, program = int(argv[1]), argv[2:]
    try:
        pairs = [(_listen(MODEL_PORT), os.path.join(LINK_MOUNT, MODEL_SOCKET)),
                 (_listen(PROXY_PORT), os.path.join(LINK_MOUNT, PROXY_SOCKET))]
    except OSError as exc:
        sys.stderr.write(f"trialhouse: the gateway forwarder cannot listen on the sandbox's loopback: {exc}\n")
        os._exit(127)
    pid = os.fork()
    if pid == 0:
        _detach_and_serve(pairs, ready_fd)
    os.waitpid(pid, 0)
    for sock, _path in pairs:
        sock.close()
    os.write(ready_fd, b"ready\n")
    os.close(ready_fd)
    try:
        os.execvp(program[0], program)
    except OSError as exc:
        sys.stderr.write(f"trialhouse: cannot start {program[0]}: {exc}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv)
