package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
)

func signature(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}
