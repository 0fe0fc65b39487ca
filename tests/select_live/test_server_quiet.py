"""The stand-in OpenAI server of ``conftest.py`` stays quiet when a client resets its
connection (a live run aborted under load): socketserver printed the traceback to the
``sys.stderr`` of the moment, which a ``CliRunner`` had replaced, so a command's output held
a server's traceback (``test_disk_full_during_select_live...`` failed on a loaded machine)."""

from __future__ import annotations

import socket
import struct
import time


def test_a_client_reset_prints_no_server_traceback(live_setup, capsys):
    s = live_setup
    for _ in range(3):
        client = socket.create_connection(("127.0.0.1", s.port))
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{")
        # an abortive close (RST): the server's read fails with ConnectionResetError
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    time.sleep(0.5)
    assert "Traceback" not in capsys.readouterr().err
