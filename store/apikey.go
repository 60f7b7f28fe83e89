package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// APIKeySecretPrefix starts every secret made by [NewAPIKeySecret].
const APIKeySecretPrefix = "baton_"

// APIKeyPrefixLen is the number of leading characters of a secret stored as
// [APIKey.Prefix].
const APIKeyPrefixLen = 12

// HashAPIKey returns the hex SHA-256 of secret, the form in which keys are
// stored and looked up.
func HashAPIKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// NewAPIKeySecret returns a new random secret: [APIKeySecretPrefix] followed
// by 32 random bytes in unpadded base64url.
func NewAPIKeySecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return APIKeySecretPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// APIKeyPrefix returns the part of secret stored in the clear as
// [APIKey.Prefix]: its first [APIKeyPrefixLen] bytes, or half of a shorter
// secret.
func APIKeyPrefix(secret string) string {
	if len(secret) <= APIKeyPrefixLen {
		return secret[:len(secret)/2]
	}
	return secret[:APIKeyPrefixLen]
}
