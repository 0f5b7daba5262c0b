#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""Write the seed corpora of fuzz_http_sse, fuzz_sse, fuzz_hpack_h2 and fuzz_grpc
(tests/noroot/fuzz/corpus/<harness>/). fuzz_http_sse's zmtp_* seeds are the pyzmq
bytes of tests/unit/proto/zmtp_captures.h (tests/unit/proto/zmtp_capture.py), whole and
from the middle (no greeting); len32_* are length-prefixed JSON messages.
fuzz_cupti_decode's seeds come from make_cupti_seeds.c (needs the CUPTI headers)."""
import json
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
RECV, SEND, XMIT, CLOSE, EXIT = 1, 2, 3, 4, 5


def rec(typ, payload=b"", sock=0, gap=0, step_ms=1, flags=0, seq=0):
    return struct.pack("<BBHHBBI", typ, sock, len(payload), gap, step_ms, flags, seq) + payload


def chunk(b):
    return b"%x\r\n" % len(b) + b + b"\r\n"


def sse(obj):
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text, final=None):
    return sse({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": final}]})


REQ = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
       b"Content-Type: application/json\r\nContent-Length: 47\r\n\r\n"
       b'{"stream":true,"messages":[{"role":"user"}]}   ')
HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n")


def chat_stream(sock=0, gap_at=None, abort=False):
    out = [rec(RECV, REQ, sock)]
    seq = 1000
    parts = [HEAD, chunk(sse({"choices": [{"delta": {"role": "assistant"}}]}))]
    parts += [chunk(tok(w)) for w in ("Hello", " world", "!")]
    parts += [chunk(tok("", "stop")), chunk(b"data: [DONE]\n\n"), b"0\r\n\r\n"]
    for i, p in enumerate(parts):
        if abort and i == 4:
            out.append(rec(CLOSE, sock=sock))
            return b"\x00" + b"".join(out)
        seq += len(p)
        if gap_at == i:
            out.append(rec(SEND, p[:5], sock, gap=len(p) - 5, seq=seq))
        else:
            out.append(rec(SEND, p, sock, seq=seq))
        out.append(rec(XMIT, sock=sock, gap=len(p), seq=seq))
    return b"\x01" + b"".join(out)


def nonstream():
    body = json.dumps({"choices": [{"message": {"content": "hi"}}],
                       "usage": {"completion_tokens": 1}}).encode()
    resp = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
            % len(body)) + body
    return b"\x00" + rec(RECV, REQ.replace(b"true", b"fals")) + rec(SEND, resp) + rec(CLOSE)


def llamacpp():
    req = (b"POST /completion HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}")
    resp = HEAD + chunk(sse({"content": "a", "stop": False, "tokens": [1, 2]}))
    resp += chunk(sse({"content": "", "stop": True, "tokens_predicted": 2,
                       "tokens_evaluated": 5})) + b"0\r\n\r\n"
    return b"\x00" + rec(RECV, req, 1) + rec(SEND, resp, 1) + rec(EXIT)


def write(harness, name, data):
    d = os.path.join(HERE, "corpus", harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def frame(typ, flags, sid, payload=b""):
    n = len(payload)
    return struct.pack(">BHBBI", n >> 16, n & 0xffff, typ, flags, sid) + payload


def h2_req(path, sid, end=True):
    p = path.encode()
    return frame(1, 0x4 | (0x1 if end else 0), sid, b"\x83\x86\x04" + bytes([len(p)]) + p)


def h2_resp(sid, ctype=b"text/event-stream"):
    return frame(1, 0x4, sid, b"\x88\x0f\x10" + bytes([len(ctype)]) + ctype)


def h2_rec(server_writes, payload, gap=0, step=1, xmit=False):
    d = (1 if server_writes else 0) | (2 if xmit else 0) | (step << 4)
    return struct.pack("<BHB", d, len(payload), gap) + payload


def h2_seeds():
    """fuzz_hpack_h2: HPACK blocks (RFC 7541 C.4, C.5 examples), HTTP/2 conversations."""
    c4 = [bytes.fromhex("828684418cf1e3c2e5f23a6ba0ab90f4ff"),
          bytes.fromhex("828684be5886a8eb10649cbf"),
          bytes.fromhex("828785bf408825a849e95ba97d7f8925a849e95bb8e8b4bf")]
    write("hpack_h2", "rfc_c4", b"\x00" + b"".join(bytes([len(b)]) + b for b in c4))
    c5 = bytes.fromhex("4803333032580770726976617465611d4d6f6e2c203231204f637420323031332032303a"
                       "31333a323120474d546e1768747470733a2f2f7777772e6578616d706c652e636f6d")
    write("hpack_h2", "rfc_c5_256", b"\x00\xff\x01\x00" + bytes([len(c5)]) + c5 +
          b"\x08\x48\x03\x33\x30\x37\xc1\xc0\xbf")
    write("hpack_h2", "unsynced", b"\x02\x02\x83\xbe\x03\x83\xbe\xbf")
    tok = lambda t: sse({"choices": [{"delta": {"content": t}}]})  # noqa: E731
    conv = (h2_rec(False, frame(4, 0, 0) + h2_req("/v1/chat/completions", 1) +
                   h2_req("/v1/completions", 3)) +
            h2_rec(True, frame(4, 1, 0) + h2_resp(3), xmit=True) +
            h2_rec(True, frame(0, 0, 3, tok("a")), xmit=True) +
            h2_rec(True, h2_resp(1) + frame(0, 0, 1, tok("b")), xmit=True) +
            h2_rec(False, frame(8, 0, 0, b"\0\0\1\0")) +
            h2_rec(True, frame(0, 1, 3, b"data: [DONE]\n\n")) +
            h2_rec(True, frame(0, 0, 1, tok("c")), gap=20) +
            h2_rec(True, frame(0, 1, 1)))
    write("hpack_h2", "two_streams", b"\x01" + conv)
    write("hpack_h2", "rst_goaway", b"\x01" + h2_rec(False, h2_req("/v1/x", 1) + h2_req("/v1/y", 3)) +
          h2_rec(True, h2_resp(1)) + h2_rec(False, frame(3, 0, 1, b"\0\0\0\x08")) +
          h2_rec(True, frame(7, 0, 0, b"\0\0\0\x01\0\0\0\0")))
    write("hpack_h2", "continuation", b"\x01" + h2_rec(
        False, frame(1, 0x1, 1, b"\x83\x86") + frame(9, 0x4, 1, b"\x04\x02/a")) +
        h2_rec(True, h2_resp(1) + frame(0, 1, 1, tok("x"))))
    write("hpack_h2", "mid", b"\x03" + h2_rec(False, frame(1, 0x5, 7, b"\x83\xbe")) +
          h2_rec(True, h2_resp(7) + frame(0, 1, 7, tok("m"))))


def grpc_seeds():
    """fuzz_grpc: a profile, then messages (reader) or DATA frames (over HTTP/2)."""
    prof = b"/g.S/M 1#\n/g.S/M 2\n"
    msg = lambda ids: b"\x0a" + bytes([len(ids)]) + bytes(ids)  # noqa: E731
    lp = lambda m: b"\x00" + struct.pack(">I", len(m)) + m  # noqa: E731
    stream = lp(msg([7, 8, 9])) + lp(msg([1])) + lp(b"") + lp(msg([2, 3]))
    chunks = b"".join(bytes([len(stream[i:i + 7]), 0]) + stream[i:i + 7]
                      for i in range(0, len(stream), 7))
    write("grpc", "reader", b"\x00" + bytes([len(prof)]) + prof + chunks)
    write("grpc", "reader_gap", b"\x00" + bytes([len(prof)]) + prof + bytes([5, 9]) + stream[:5] +
          bytes([len(stream) - 9, 0]) + stream[9:])
    frames = b"".join(bytes([len(m), 0]) + m for m in (lp(msg([7, 8, 9])), lp(msg([1])) + lp(msg([2]))))
    write("grpc", "h2", b"\x03" + bytes([len(prof)]) + prof + frames)
    write("grpc", "h2_chunks", b"\x03\x00" + frames)
    write("grpc", "h2_gap", b"\x01" + bytes([len(prof)]) + prof + bytes([len(lp(msg([4, 5]))), 3]) +
          lp(msg([4, 5])))


def zmtp_captures():
    """{name: [(dir, bytes)]} from tests/unit/proto/zmtp_captures.h."""
    path = os.path.join(HERE, "..", "..", "unit", "proto", "zmtp_captures.h")
    out, cur = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"static const struct zmtp_chunk (\w+)\[\]", line)
            if m:
                cur = out.setdefault(m.group(1), [])
                continue
            m = re.match(r'\s*\{ (\d), (\d+), \(const unsigned char \*\)"(.*)" \},', line)
            if m and cur is not None:
                b = bytes(int(h, 16) for h in re.findall(r"\\x([0-9a-f]{2})", m.group(3)))
                assert len(b) == int(m.group(2))
                cur.append((int(m.group(1)), b))
    return out


def zmtp_seeds():
    caps = zmtp_captures()
    for name, chunks in caps.items():
        for binder in (False, True):
            seq, out, gapped = 5000, [], []
            for d, b in chunks:
                typ = SEND if (d == 0) != binder else RECV
                if typ == SEND:
                    seq += len(b)
                out.append(rec(typ, b, seq=seq if typ == SEND else 0))
                # the same, with a long frame's write captured 100 bytes
                cut = b[:100] if len(b) > 300 else b
                gapped.append(rec(typ, cut, gap=len(b) - len(cut),
                                  seq=seq if typ == SEND else 0))
            out.append(rec(CLOSE))
            gapped.append(rec(CLOSE))
            side = "bind" if binder else "connect"
            write("http_sse", "zmtp_%s_%s" % (name[4:], side), b"\x02" + b"".join(out))
            if gapped != out:
                write("http_sse", "zmtp_%s_%s_gap" % (name[4:], side),
                      b"\x02" + b"".join(gapped))
            # seen from the middle: no greeting, no READY (proto_zmtp_mid)
            write("http_sse", "zmtp_%s_%s_mid" % (name[4:], side),
                  b"\x02" + b"".join(out[5:]))


def len32_seeds():
    """Length-prefixed JSON messages with request ids, both byte orders (proto_len32*)."""
    for order, f in (("be", ">I"), ("le", "<I")):
        out, seq = [], 5000
        for i in range(3):
            rid = "cmpl-%032x" % (0x5eed + i)
            body = json.dumps({"op": "add", "request_id": rid, "max_tokens": 4}).encode()
            seq += 4 + len(body)
            out.append(rec(SEND, struct.pack(f, len(body)) + body, seq=seq))
            body = json.dumps({"outputs": [[rid, 100001, False]]}).encode()
            out.append(rec(RECV, struct.pack(f, len(body))))
            out.append(rec(RECV, body))
        out.append(rec(CLOSE))
        write("http_sse", "len32_%s" % order, b"\x02" + b"".join(out))


def main():
    zmtp_seeds()
    len32_seeds()
    h2_seeds()
    grpc_seeds()
    write("http_sse", "chat_stream", chat_stream())
    write("http_sse", "chat_gap", chat_stream(gap_at=3))
    write("http_sse", "chat_abort", chat_stream(abort=True))
    write("http_sse", "two_conns", chat_stream(0) + chat_stream(1)[1:])
    write("http_sse", "nonstream", nonstream())
    write("http_sse", "llamacpp", llamacpp())
    write("http_sse", "keepalive", chat_stream() + chat_stream()[1:])
    stream = b"".join([sse({"choices": [{"delta": {"role": "assistant"}}]}), tok("a"),
                       b": keep-alive\n\n", tok("b"),
                       b"data: {\"error\": {\"message\": \"x\"}}\n\n",
                       sse({"choices": [], "usage": {"completion_tokens": 2,
                                                     "prompt_tokens": 3}}),
                       b"data: [DONE]\n\n"])
    write("sse", "openai", b"\x07" + stream)
    write("sse", "openai_crlf", b"\x01" + stream.replace(b"\n", b"\r\n"))
    write("sse", "llamacpp", b"\x03" + sse({"content": "x", "tokens": [5], "stop": False}) +
          sse({"content": "", "stop": True, "tokens_predicted": 9}))
    write("sse", "multiline", b"\x00data: {\"choices\":\ndata: [{\"text\":\"x\"}]}\n\n")
    write("sse", "reasoning", b"\x05" + sse({"choices": [{"delta": {"reasoning_content": "r"}}]})
          + sse({"choices": [{"delta": {"tool_calls": [{"id": "1"}]}}]}))


if __name__ == "__main__":
    main()
