package transporttest

// SubtestNames lists the suite's subtests, for the mutant tests to check
// that each one can fail.
func SubtestNames() []string {
	names := make([]string, len(subtests))
	for i, tt := range subtests {
		names[i] = tt.name
	}
	return names
}
