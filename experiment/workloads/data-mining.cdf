# Data-mining workload: the sizes of the flows of a production data-mining
# cluster, from A. Greenberg et al., "VL2: A Scalable and Flexible Data
# Center Network", SIGCOMM 2009, Fig. 2, as the papers' simulations draw
# them (001 §5.2 and Fig. 5, "data mining workload [16]"). The points are
# the ones the pFabric and MQ-ECN/PIAS ns-2 simulations ship (CDF_vl2.tcl),
# given there in 1460-byte packets and here in bytes (packets × 1460).
# Mean ≈ 7.47 MB; half of the flows are a single packet, and the 1% of
# flows over 97 MB carry about 70% of the bytes.
#
# Each line: flow size in bytes, fraction of flows no larger. Sizes
# between two points are drawn by linear interpolation.
1460 0
1460 0.5
2920 0.6
4380 0.7
10220 0.8
389820 0.9
3076220 0.95
97333820 0.99
973333820 1
