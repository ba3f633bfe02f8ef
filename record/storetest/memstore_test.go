package storetest_test

import (
	"testing"

	"github.com/batonhq/baton/record"
	"github.com/batonhq/baton/record/storetest"
)

func TestMemStore(t *testing.T) {
	storetest.Run(t, func(*testing.T) record.Store { return record.NewMemStore() })
}
