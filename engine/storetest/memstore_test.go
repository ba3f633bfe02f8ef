package storetest_test

import (
	"testing"

	"github.com/batonhq/baton/engine"
	"github.com/batonhq/baton/engine/storetest"
)

func TestMemStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) engine.Store { return engine.NewMemStore() })
}
