package rules

import (
	"regexp"

	"github.com/batonhq/baton/internal/suggest"
)

// didYouMean returns ` (did you mean "x"?)` or "".
func didYouMean(name string, candidates []string) string {
	if s := suggest.Nearest(name, candidates); s != "" {
		return ` (did you mean "` + s + `"?)`
	}
	return ""
}

// pattern is a name syntax with its description for error messages.
type pattern struct {
	re   *regexp.Regexp
	desc string
}

func (p pattern) match(s string) bool { return p.re.MatchString(s) }

// Name syntaxes. State names and agent ids share one namespace and must be
// usable as `visits.NAME` in expressions.
var (
	workflowName = pattern{regexp.MustCompile(`^[a-z0-9_-]+$`), "[a-z0-9_-]+"}
	identName    = pattern{regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`), "[A-Za-z_][A-Za-z0-9_]*"}
	ruleIDName   = pattern{regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`), "[A-Za-z0-9_][A-Za-z0-9_.-]*"}
	triggerName  = pattern{regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`), "[A-Za-z0-9_][A-Za-z0-9_.-]*"}
)
