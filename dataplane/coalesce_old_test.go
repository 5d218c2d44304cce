package dataplane_test

import (
	"time"

	"github.com/ecnswitch/ecnswitch/dataplane"
)

func setCoalesce(*dataplane.PortConfig, time.Duration) {}
