# Web-search workload: the sizes of the background flows of a production
# web-search cluster, from M. Alizadeh et al., "Data Center TCP (DCTCP)",
# SIGCOMM 2010, Fig. 4, as the papers' simulations and testbeds draw them
# (001 §5.1.2 and Fig. 5, "web search workload [6]"; 000 and 003 use the
# same distribution). The points are the ones the pFabric and MQ-ECN/PIAS
# ns-2 simulations ship (CDF_search.tcl), given there in 1460-byte packets
# and here in bytes (packets × 1460). Mean ≈ 1.67 MB; about 60% of the
# bytes are in flows under 10 MB (001 §5.1).
#
# Each line: flow size in bytes, fraction of flows no larger. Sizes
# between two points are drawn by linear interpolation.
8760 0
8760 0.15
18980 0.2
27740 0.3
48180 0.4
77380 0.53
194180 0.6
973820 0.7
1946180 0.8
4866180 0.9
9733820 0.97
29200000 1
