package server

import "strings"

// bearerToken is the token of an Authorization header in the bearer
// scheme, whose name is case-insensitive (RFC 7235: "bearer", "BEARER"),
// followed by one space or more and the token.
func bearerToken(header string) (string, bool) {
	const scheme = "bearer"
	if len(header) <= len(scheme) || !strings.EqualFold(header[:len(scheme)], scheme) || header[len(scheme)] != ' ' {
		return "", false
	}
	token := strings.TrimLeft(header[len(scheme):], " ")
	return token, token != ""
}
