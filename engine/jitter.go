package engine

import (
	"hash/fnv"
	"math/rand/v2"
	"strconv"
)

// jitter draws the uniform number in [0, 1) that a full-jitter backoff
// scales the retry of step in instance id by: a function of the engine's
// seed, the instance and the step only, so that replays draw alike.
func (e *Engine) jitter(id string, step int) float64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{':'})
	h.Write([]byte(strconv.Itoa(step)))
	return rand.New(rand.NewPCG(e.seed, h.Sum64())).Float64()
}
