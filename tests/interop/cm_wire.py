# SPDX-License-Identifier: BSD-3-Clause
"""The CM messages on the bridge, as Wireshark's dissector decodes them,
against Linux's own in the reference capture.

tests/data/rxe/send_bw_rdmacm.pcap holds the CM exchanges of `ib_send_bw -R`
between two Linux rxe hosts. Every REQ and REP field below is one that does
not depend on the connection (its IDs, QPN, PSN, GUID, addresses, ports,
path MTU, depths or the application's retry counts and flow control flag):
each REQ and REP of a scenario, uroce's and the kernel's alike, must carry
Linux's value. The end-to-end flow control flag is the application's
(rdma_conn_param): both sides of a scenario run one program, which asks the
same of both, so the REQ's and the REP's must agree. The exchange itself
must be complete: a REQ, REP and RTU, and a DREQ answered by a DREP.
"""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "..", "data", "rxe", "send_bw_rdmacm.pcap")

REQ_FIELDS = [f"infiniband.cm.req.{f}" for f in (
    "serviceid.prefix", "serviceid.protocol", "localqkey", "localeecn", "remoteeecn", "remoteresptout",
    "transpsvctype", "localresptout", "pkey", "rdcexist", "maxcmretr", "srq", "ext_transport",
    "prim_locallid", "prim_remotelid", "prim_tfcclass", "prim_hoplim", "prim_sl", "prim_subnetlocal",
    "prim_localacktout", "alt_locallid", "alt_remotelid", "alt_localgid", "alt_remotegid", "alt_flowlabel",
    "alt_pktrate", "alt_tfcclass", "alt_hoplim", "alt_sl", "alt_subnetlocal", "alt_localacktout")]
REP_FIELDS = [f"infiniband.cm.rep.{f}" for f in (
    "localqkey", "localeecn", "tgtackdelay", "failoveracc", "srq")]
FLOW = {"0x0010": "infiniband.cm.req.e2eflowctrl", "0x0013": "infiniband.cm.rep.e2eflowctrl"}
ATTRS = {"0x0010": "REQ", "0x0011": "MRA", "0x0012": "REJ", "0x0013": "REP", "0x0014": "RTU", "0x0015": "DREQ",
         "0x0016": "DREP", "0x0017": "SIDR_REQ", "0x0018": "SIDR_REP"}
# rdma_cm's UDP port space (the service ID's bits 16..31) and its Q_Key.
PS_UDP = 0x0111
UDP_QKEY = 0x01234567


MAD_FIELDS = ["infiniband.mad.transactionid", "infiniband.mad.mgmtclass", "infiniband.mad.classversion",
              "infiniband.mad.method", "infiniband.mad.data"]
ALL_FIELDS = MAD_FIELDS + REQ_FIELDS + REP_FIELDS + list(FLOW.values())
_decoded = {}  # pcap -> its MADs (the reference is read once per run)


def _mads(pcap):
    """[{field: value, "src": sender, "attr": attribute ID}] of the CM MADs
    in `pcap`, in order: one tshark run decodes every field any check reads
    (a field a MAD does not carry is empty)."""
    if pcap in _decoded:
        return _decoded[pcap]
    out = subprocess.run(["tshark", "-r", pcap, "-d", "udp.port==4791,infiniband", "-Y", "infiniband.mad",
                          "-T", "fields", "-E", "separator=|", "-e", "ip.src", "-e", "infiniband.mad.attributeid"] +
                         [f"-e{f}" for f in ALL_FIELDS],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=True).stdout
    rows = []
    for ln in out.splitlines():
        if not ln:
            continue
        values = ln.split("|")
        row = dict(zip(ALL_FIELDS, values[2:]))
        row["src"], row["attr"] = values[0], values[1]
        rows.append(row)
    if pcap == REFERENCE:
        _decoded[pcap] = rows
    return rows


def _fields(mads, attr, fields):
    """[[sender, value...]] of the MADs with attribute `attr`."""
    return [[m["src"]] + [m.get(f, "") for f in fields] for m in mads if m["attr"] == attr]


def messages(pcap, mads=None):
    """[(sender, name)] of the CM MADs in order."""
    return [(m["src"], ATTRS.get(m["attr"], m["attr"])) for m in (mads if mads is not None else _mads(pcap))]


def reference():
    """{field: Linux's value} for the fields above; each is the same in
    every reference REQ (REP), or the reference is not what this expects."""
    ref = {}
    mads = _mads(REFERENCE)
    for attr, fields in (("0x0010", REQ_FIELDS), ("0x0013", REP_FIELDS)):
        rows = _fields(mads, attr, fields)
        assert rows, f"no {ATTRS[attr]} in {REFERENCE}"
        for i, f in enumerate(fields):
            values = {r[i + 1] for r in rows}
            assert len(values) == 1, f"{f} differs between Linux's own {ATTRS[attr]}s: {values}"
            ref[f] = values.pop()
    return ref


def check(pcap, client, server):
    """Problems (strings) with the CM exchange in `pcap` between the active
    side `client` and the passive side `server` (IPv4 addresses)."""
    problems = []
    ref = reference()
    mads = _mads(pcap)
    for attr, fields in (("0x0010", REQ_FIELDS), ("0x0013", REP_FIELDS)):
        rows = _fields(mads, attr, fields)
        if not rows:
            problems.append(f"no {ATTRS[attr]} on the bridge")
        for r in rows:
            for i, f in enumerate(fields):
                if r[i + 1] != ref[f]:
                    problems.append(f"{ATTRS[attr]} from {r[0]}: {f} is {r[i + 1] or '(absent)'}, Linux sends {ref[f]}")
    flags = {ATTRS[a]: {r[1] for r in _fields(mads, a, [f])} for a, f in FLOW.items()}
    if len(flags["REQ"] | flags["REP"]) > 1:
        problems.append(f"the REQ's and REP's end-to-end flow control flags differ: {flags}")
    seq = messages(pcap, mads)
    sent = {ip: [m for s, m in seq if s == ip] for ip in (client, server)}
    for who, name in ((client, "REQ"), (server, "REP"), (client, "RTU")):
        if name not in sent[who]:
            problems.append(f"{who} sent no {name}: {seq}")
    # A DREP answers a DREQ the other side sent before it. When both sides
    # disconnect at once the DREQs cross, and Linux answers the one it
    # receives while its own is out only when its application disconnects
    # again: one answered DREQ is what every exchange has.
    answered = any(m == "DREP" and any(m2 == "DREQ" and s2 != s for s2, m2 in seq[:k])
                   for k, (s, m) in enumerate(seq))
    if not answered:
        problems.append(f"no DREQ answered by a DREP: {seq}")
    return problems, seq


def _sidr(mads):
    """[(sender, attribute, TID, MAD data bytes)] of the SIDR MADs: the
    header as Wireshark decodes it (only CM class 7, version 2, method Send),
    the data area as the IBA lays it out."""
    rows = []
    for m in mads:
        if m["attr"] not in ("0x0017", "0x0018"):
            continue
        header = tuple(int(m[f"infiniband.mad.{f}"], 0) for f in ("mgmtclass", "classversion", "method"))
        rows.append((m["src"], ATTRS[m["attr"]], int(m["infiniband.mad.transactionid"], 0), header,
                     bytes.fromhex(m["infiniband.mad.data"].replace(":", ""))))
    return rows


def check_sidr(pcap, client, server):
    """Problems with a service ID resolution in `pcap`: the client's SIDR REQ
    (P_Key 0xFFFF, a service ID in the UDP port space) answered by the
    server's SIDR REP (same request ID, TID and service ID, status 0, the
    port space's Q_Key, a QPN), and no connection messages."""
    problems = []
    mads = _mads(pcap)
    seq = messages(pcap, mads)
    rows = _sidr(mads)
    reqs = [r for r in rows if r[1] == "SIDR_REQ" and r[0] == client]
    reps = [r for r in rows if r[1] == "SIDR_REP" and r[0] == server]
    if not reqs:
        problems.append(f"{client} sent no SIDR REQ: {seq}")
    if not reps:
        problems.append(f"{server} sent no SIDR REP: {seq}")
    for src, name, _, header, _ in rows:
        if header != (0x07, 2, 0x03):
            problems.append(f"{name} from {src}: class, version, method {header}, not CM 2 Send")
    others = [m for _, m in seq if not m.startswith("SIDR")]
    if others:
        problems.append(f"connection messages in a UD exchange: {seq}")
    if reqs and reps:
        _, _, tid, _, req = reqs[-1]
        _, _, rtid, _, rep = reps[-1]
        sid = int.from_bytes(req[8:16], "big")
        if int.from_bytes(req[4:6], "big") != 0xFFFF:
            problems.append(f"SIDR REQ P_Key {req[4:6].hex()}, not ffff")
        if sid >> 16 != PS_UDP:
            problems.append(f"SIDR REQ service ID {sid:#018x} is not in the UDP port space")
        if rep[0:4] != req[0:4] or rtid != tid:
            problems.append(f"SIDR REP request ID {rep[0:4].hex()} / TID {rtid:#x}, the REQ's {req[0:4].hex()} / {tid:#x}")
        if rep[4] != 0:
            problems.append(f"SIDR REP status {rep[4]}, not 0 (valid)")
        if int.from_bytes(rep[8:11], "big") == 0:
            problems.append("SIDR REP names QP 0")
        if int.from_bytes(rep[12:20], "big") != sid:
            problems.append(f"SIDR REP service ID {rep[12:20].hex()}, the REQ's {sid:#018x}")
        if int.from_bytes(rep[20:24], "big") != UDP_QKEY:
            problems.append(f"SIDR REP Q_Key {rep[20:24].hex()}, not {UDP_QKEY:#010x}")
    return problems, seq
