"""A program on MASTER_PORT that is not a rendezvous store, for cli_stranger_test.sh.

    python3 stranger_store.py PORT_FILE huge|garbage|banner

Listens on a free loopback port (written to PORT_FILE) and answers a store
client's queries as a stranger might:
  huge:    as a store would, until the client asks for a value (GET); then it
           announces a value of 2^40 bytes, more than the machine's memory.
  garbage: 64 KiB of 0xff to whatever arrives.
  banner:  speaks first, as an SSH server does: a version line on every
           connection, before any question (LibTorch 1.13's store client
           keeps a second connection whose thread reads such bytes as a
           key's length and ends the process when it cannot allocate it).
The messages are c10d's TCPStore wire format, a query byte then its
strings: LibTorch 1.13's (0 SET, 2 GET, 3 ADD, 5 WAIT) or 2.x's, whose
client opens with VALIDATE (0 and a magic number) and then pings (1 SET,
3 GET, 4 ADD, 6 WAIT, 13 PING, which echoes a nonce), told apart by that
first message.
"""
import os
import socket
import struct
import sys
import threading

port_file, mode = sys.argv[1], sys.argv[2]
server = socket.socket()
server.bind(("127.0.0.1", 0))
server.listen(8)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)


class Stream:
    """The client's bytes, read as c10d's messages: a query byte, then
    strings and values as a uint64 length and bytes, counts as uint64."""

    def __init__(self, conn):
        self.conn, self.data = conn, b""

    def take(self, n):
        while len(self.data) < n:
            more = self.conn.recv(65536)
            if not more:
                raise EOFError
            self.data += more
        out, self.data = self.data[:n], self.data[n:]
        return out

    def peek(self, n):
        out = self.take(n)
        self.data = out + self.data
        return out

    def u64(self):
        return struct.unpack("<Q", self.take(8))[0]

    def string(self):
        return self.take(self.u64())


VALIDATE_MAGIC = struct.pack("<I", 0x3C85F7CE)  # 2.x's TCPStoreBackend.hpp
QUERIES = {"1.13": {0: "SET", 2: "GET", 3: "ADD", 5: "WAIT"},
           "2.x": {1: "SET", 3: "GET", 4: "ADD", 6: "WAIT", 13: "PING"}}


def serve(conn):
    if mode == "banner":
        conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
    stream = Stream(conn)
    protocol = None
    try:
        while True:
            kind = stream.take(1)[0]
            if mode == "banner":
                continue  # waits for an SSH client's version line
            if mode == "garbage":
                conn.sendall(b"\xff" * 65536)
                continue
            if protocol is None:
                protocol = "1.13"
                if kind == 0 and stream.peek(4) == VALIDATE_MAGIC:
                    stream.take(4)
                    protocol = "2.x"  # VALIDATE: no answer
                    continue
            query = QUERIES[protocol].get(kind)
            if query == "SET":     # key value: no answer
                stream.string(), stream.string()
            elif query == "ADD":   # key delta: the new count
                stream.string(), stream.take(8)
                conn.sendall(struct.pack("<q", 2))
            elif query == "WAIT":  # n keys: stop waiting
                for _ in range(stream.u64()):
                    stream.string()
                conn.sendall(b"\x00")
            elif query == "PING":  # a nonce, echoed
                conn.sendall(stream.take(4))
            elif query == "GET":   # key: a length no store would send
                stream.string()
                conn.sendall(struct.pack("<Q", 1 << 40))
            else:
                return
    except (OSError, EOFError):
        pass


while True:
    c, _ = server.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
