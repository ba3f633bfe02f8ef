package a2aserver

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/batonhq/baton/rules"
)

// card is the agent card of workflow w, its interface at url. It carries
// both versions' fields: 1.0's supportedInterfaces, securitySchemes and
// securityRequirements, and 0.3's url, preferredTransport, protocolVersion,
// additionalInterfaces and security. Clients read the fields of their
// version and ignore the others.
func (h *Handler) card(wf *rules.Workflow, url string) obj {
	desc := wf.Description
	if desc == "" {
		desc = "Baton workflow " + wf.Name
	}
	c := obj{
		"name":        wf.Name,
		"description": desc,
		"version":     strconv.Itoa(wf.Version),
		"supportedInterfaces": []obj{
			{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
			{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
		},
		"url":                  url,
		"preferredTransport":   "JSONRPC",
		"protocolVersion":      "0.3",
		"additionalInterfaces": []obj{{"url": url, "transport": "JSONRPC"}},
		"capabilities":         obj{"streaming": true, "pushNotifications": false},
		"defaultInputModes":    []string{"application/json", "text/plain"},
		"defaultOutputModes":   []string{"application/json", "text/plain"},
		"skills": []obj{{
			"id": wf.Name, "name": wf.Name, "description": desc + "\n\n" + inputText(wf.Input),
			"tags": []string{"workflow"}, "examples": []string{},
		}},
	}
	if h.tokens {
		c["securitySchemes"] = obj{"bearer": obj{
			"httpAuthSecurityScheme": obj{"scheme": "bearer", "description": "a token of the server"},
			"type":                   "http", "scheme": "bearer", "description": "a token of the server",
		}}
		c["securityRequirements"] = []obj{{"schemes": obj{"bearer": obj{"list": []string{}}}}}
		c["security"] = []obj{{"bearer": []string{}}}
	}
	return c
}

// inputText is the input declaration in words, for the skill's
// description.
func inputText(s *rules.Schema) string {
	if s == nil || len(s.Fields) == 0 {
		return "Input: any JSON object, as the message's first data part (a message of text only gives {text})."
	}
	fields := make([]string, len(s.Fields))
	for k, f := range s.Fields {
		fields[k] = f.Name + ": " + f.Declared()
	}
	return "Input, as the message's first data part (a message of text only gives {text}; a type ending in ? is optional): {" +
		strings.Join(fields, ", ") + "}"
}

// baseURL is the server's URL as the client reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
