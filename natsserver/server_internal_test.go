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
