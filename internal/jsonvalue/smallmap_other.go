//go:build !(go1.26 && !go1.27)

package jsonvalue

// Other Go releases may lay maps out otherwise: every map is ranged over.

const smallMaps = false

type anyGroup struct {
	slots [8]struct {
		key  string
		elem any
	}
}

func smallGroup(map[string]any) (*anyGroup, uint64, bool) { return nil, 0, false }
