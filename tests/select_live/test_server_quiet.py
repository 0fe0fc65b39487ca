"""The stand-in OpenAI server of ``conftest.py`` stays quiet when a client resets its
connection or closes it mid-request (a live run aborted under load): socketserver printed the
traceback to the ``sys.stderr`` of the moment, which a ``CliRunner`` had replaced, so a
command's output held a server's traceback (``test_disk_full_during_select_live...`` failed on
a loaded machine: a request cut after its headers, read as JSON)."""

from __future__ import annotations

import socket
import struct
import time


def test_a_client_reset_prints_no_server_traceback(live_setup, capsys):
    s = live_setup
    for reset in (True, False, True, False):
        client = socket.create_connection(("127.0.0.1", s.port))
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 500\r\n\r\n{")
        if reset:  # an abortive close (RST): the server's read fails (ConnectionResetError)
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()  # else the body is cut short: it was read as JSON (JSONDecodeError)
    time.sleep(0.5)
    assert "Traceback" not in capsys.readouterr().err
