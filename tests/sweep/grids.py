"""The sweep grid the database and Ray tests share: 10 node counts x 2 NICs x 5 collectives x 5 sizes
= 500 points."""

SIZES = ["1 KiB", "32 KiB", "1 MiB", "32 MiB", "1 GiB"]
OPS = ("all_reduce", "all_gather", "all_to_all", "reduce_scatter", "broadcast")
GRID = {
    "cluster": "dgx-h100-superpod",
    "vary": {
        "nodes": [4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048],
        "scale_out.nic": ["connectx-7", "connectx-8"],
    },
    "collectives": [{"op": op, "sizes": SIZES} for op in OPS],
}
