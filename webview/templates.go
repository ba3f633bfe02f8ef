package webview

import (
	"encoding/json"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

var pageNames = []string{"instances", "instance", "deadletters", "workflows", "workflow", "agents", "login", "error"}

// parsePages parses each page with the layout. The templates are part of
// the binary: a template that does not parse is a bug caught by every test.
func parsePages() map[string]*template.Template {
	funcs := template.FuncMap{
		"pathEscape": url.PathEscape,
		"json":       prettyJSON,
		"when":       func(t time.Time) string { return formatTime(t, "2006-01-02 15:04:05 MST") },
		"clock":      func(t time.Time) string { return formatTime(t, "15:04:05.000 MST") },
		"deref":      func(t *time.Time) time.Time { return *t },
		"isTrue":     func(b *bool) bool { return b != nil && *b },
		"seconds":    func(s *float64) string { return strconv.FormatFloat(*s, 'f', 1, 64) + " s" },
		"rfc3339":    func(t time.Time) string { return formatTime(t, time.RFC3339Nano) },
		"clip":       clip,
		"clipMiddle": clipMiddle,
		"short":      func(h string) string { return clip(h, 12) },
		"join":       strings.Join,
		"cost":       formatCost,
	}
	pages := make(map[string]*template.Template, len(pageNames))
	for _, name := range pageNames {
		pages[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return pages
}

func formatTime(t time.Time, layout string) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(layout)
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// clipMiddle shortens s to at most n runes by cutting its middle: an
// error's text names where it happened first and why last, and the cause
// is what a reader of a list looks for.
func clipMiddle(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	head := n / 3
	tail := n - head - 1
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// formatCost shows a cost without the float noise that adding up many
// runs' costs leaves (0.30000000000000004): six decimals at most.
func formatCost(c float64) string {
	return strconv.FormatFloat(math.Round(c*1e6)/1e6, 'f', -1, 64)
}

// prettyJSON is v as indented JSON, for a <pre> (html/template escapes it).
func prettyJSON(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "(not JSON: " + err.Error() + ")"
	}
	return strings.TrimSuffix(b.String(), "\n")
}
