package server

import "testing"

func TestLoopbackName(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:8080": true, "LOCALHOST:1": true, "127.0.0.1": true, "127.0.0.1:8080": true,
		"127.255.0.1:80": true, "[::1]": true, "[::1]:8080": true, "::1": true,
		"": false, ":8080": false, "localhost.": false, "a.localhost": false, "a.localhost:8080": false,
		"localhost.evil.example": false, "evil.example:8080": false, "[::2]:8080": false, "[::1": false,
		"0.0.0.0:8080": false, "2130706433:8080": false, "0x7f.1:8080": false, "[fe80::1%25lo]:80": false,
	} {
		if got := loopbackName(host); got != want {
			t.Errorf("loopbackName(%q): got %v, want %v", host, got, want)
		}
	}
}
