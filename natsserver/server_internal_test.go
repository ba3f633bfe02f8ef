package natsserver

import (
	"testing"
	"time"
)

func TestStart_SyncSettings(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		always   bool
	}{
		{"default syncs every write", 0, true},
		{"interval relaxes it", 250 * time.Millisecond, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Start(Config{Dir: t.TempDir(), SyncInterval: tt.interval})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			js := s.ns.JetStreamConfig()
			if js == nil {
				t.Fatal("got no JetStream config, want JetStream enabled")
			}
			if js.SyncAlways != tt.always {
				t.Errorf("got SyncAlways %v, want %v", js.SyncAlways, tt.always)
			}
			if tt.interval > 0 && js.SyncInterval != tt.interval {
				t.Errorf("got SyncInterval %v, want %v", js.SyncInterval, tt.interval)
			}
		})
	}
}

// MaxStore caps JetStream's disk, and is kept when JetStream is started
// again after a write error.
func TestStart_MaxStore(t *testing.T) {
	s, err := Start(Config{Dir: t.TempDir(), MaxStore: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.ns.JetStreamConfig().MaxStore; got != 1<<20 {
		t.Fatalf("got MaxStore %d, want %d", got, 1<<20)
	}
	if err := s.restart(); err != nil {
		t.Fatal(err)
	}
	if got := s.ns.JetStreamConfig().MaxStore; got != 1<<20 {
		t.Errorf("got MaxStore %d after a restart, want %d", got, 1<<20)
	}
	if err := s.Healthy(); err != nil {
		t.Errorf("got %v after a restart, want healthy", err)
	}
	if _, err := Start(Config{Dir: t.TempDir(), MaxStore: -1}); err == nil {
		t.Error("a negative MaxStore was taken")
	}
}
