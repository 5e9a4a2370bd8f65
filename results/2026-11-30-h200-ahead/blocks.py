import gzip, json, statistics as st, sys
sweep = json.load(gzip.open(sys.argv[1]))
wl = sys.argv[2] if len(sys.argv) > 2 else "small"
for variant in ["ipc-tq", "lib-tq-ipc"]:
    r = [r for r in sweep["results"] if r["variant"] == variant and r["workload"] == wl][0]
    print(variant, r["median_us"])
    for rank, its in enumerate(r["timelines"]):
        nb = len(its[0]["blocks"])
        for b in range(nb):
            ps = st.median(t["blocks"][b]["pack_us"][0] for t in its)
            pe = st.median(t["blocks"][b]["pack_us"][1] for t in its)
            us = st.median(t["blocks"][b]["unpack_us"][0] for t in its)
            ue = st.median(t["blocks"][b]["unpack_us"][1] for t in its)
            du = st.median(t["blocks"][b]["unpack_us"][1]-t["blocks"][b]["unpack_us"][0] for t in its)
            dp = st.median(t["blocks"][b]["pack_us"][1]-t["blocks"][b]["pack_us"][0] for t in its)
            print(f"  r{rank} b{b}: pack {ps:.2f}-{pe:.2f} ({dp:.2f}) unpack {us:.2f}-{ue:.2f} ({du:.2f})", {k:v for k,v in its[0]["blocks"][b].items() if k not in ("pack_us","unpack_us")})
