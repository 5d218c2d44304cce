package marking

// SchemeDCTCP is the name in configs of DCTCP-style marking: RED as a
// cut-off at K (scheme: dctcp).
const SchemeDCTCP = "dctcp"

func dctcpScheme() Scheme {
	return Scheme{
		Name:   SchemeDCTCP,
		Title:  "DCTCP",
		Paper:  "001 §2.2 Eq. 1; 002 §III-A",
		Doc:    "RED as a cut-off: mark every packet that finds at least K bytes in its queue, port or pool; K given, or the standard threshold λ·C·RTT",
		Stages: AtEither,
		State:  "none",
		Params: []Param{
			measureParam(),
			thresholdParam("k", "λ·C·RTT from rtt and lambda", "the cut-off K", "001 §2.2 Eq. 1"),
			rttParam("required without k", "RTT of the standard threshold K = λ·C·RTT"),
			lambdaParam("λ of the standard threshold"),
			{Key: "split", Unit: UnitBool, Default: false,
				Doc: "per-queue minimum threshold K_i = W_i/Σ_j W_j × K over the port's queues (measure queue only)", Paper: "001 §2.2.2 Eq. 2"},
			mtuParam(),
		},
		Examples: []Params{
			{"k": Packets(65)},
			{"rtt": int64(100_000)},
			{"measure": "port", "rtt": int64(80_000), "lambda": 0.72},
		},
		build: buildDCTCP,
	}
}

// buildDCTCP builds a cut-off RED marker at k, or at λ·C·RTT.
func buildDCTCP(name string, p Params, at Placement) ([]Member, error) {
	k := p.threshold("k")
	switch {
	case p.has("k") && (p.has("rtt") || p.has("lambda")):
		return nil, paramError(SchemeDCTCP, "k", "k set with rtt/lambda; give k, or rtt and lambda for the standard threshold λ·C·RTT")
	case !p.has("k") && !p.has("rtt"):
		return nil, paramError(SchemeDCTCP, "", "dctcp needs k (a threshold), or rtt (and lambda, default 1) for the standard threshold K = λ·C·RTT (001 §2.2 Eq. 1)")
	case !p.has("k"):
		if at.LineRate == 0 {
			return nil, noRate(SchemeDCTCP, "", "resolve the standard threshold λ·C·RTT")
		}
		lambda := DefaultLambda
		if p.has("lambda") {
			lambda = p.f64("lambda")
		}
		k = Standard(p.i64("rtt"), lambda)
	}
	cfg := CutOff(measureOf(p.str("measure")), k)
	cfg.Split, cfg.LineRate, cfg.MTU = p.flag("split"), at.LineRate, p.i64("mtu")
	m, err := NewRED(cfg, at.Stage, at.Queues)
	return one(name, m, err)
}
