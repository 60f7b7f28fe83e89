package store

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
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

// Scope is what an API key may do. Each scope includes the ones before it:
// [ScopeRead] reads threads, runs, steps and streams; [ScopeRun] also
// starts and cancels runs (and creates threads, proposes thread handoffs);
// [ScopeDecide] also decides interrupts; [ScopeAdmin] also reads the audit
// log and the webhook deliveries. Scopes are stable strings.
type Scope string

// The scopes, from the least to the most.
const (
	ScopeRead   Scope = "read"
	ScopeRun    Scope = "run"
	ScopeDecide Scope = "decide"
	ScopeAdmin  Scope = "admin"
)

// Scopes are the scopes, from the least to the most.
var Scopes = []Scope{ScopeRead, ScopeRun, ScopeDecide, ScopeAdmin}

func (s Scope) rank() int {
	for i, x := range Scopes {
		if x == s {
			return i
		}
	}
	return -1
}

// Valid reports whether s is one of [Scopes].
func (s Scope) Valid() bool { return s.rank() >= 0 }

// Includes reports whether a key of scope s may do what need allows.
func (s Scope) Includes(need Scope) bool {
	r := s.rank()
	return r >= 0 && r >= need.rank() && need.rank() >= 0
}

// ScopesInclude reports whether one of have includes need.
func ScopesInclude(have []Scope, need Scope) bool {
	for _, s := range have {
		if s.Includes(need) {
			return true
		}
	}
	return false
}

// ParseScopes parses scopes as given to baton keys create: each item one
// scope or several separated by commas or spaces ("read", "run,decide").
// The result is sorted, least first, without duplicates; no scope at all
// is an error.
func ParseScopes(items []string) ([]Scope, error) {
	seen := map[Scope]bool{}
	for _, it := range items {
		for _, f := range strings.FieldsFunc(it, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			sc := Scope(strings.ToLower(f))
			if !sc.Valid() {
				return nil, fmt.Errorf("%w: unknown scope %q: want read, run, decide or admin", ErrInvalid, f)
			}
			seen[sc] = true
		}
	}
	var out []Scope
	for _, s := range Scopes {
		if seen[s] {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no scope given: want read, run, decide or admin", ErrInvalid)
	}
	return out, nil
}

// JoinScopes is the stored form of scopes: space-separated.
func JoinScopes(scopes []Scope) string {
	ss := make([]string, len(scopes))
	for i, s := range scopes {
		ss[i] = string(s)
	}
	return strings.Join(ss, " ")
}

// SplitScopes reads the stored form of scopes.
func SplitScopes(s string) []Scope {
	var out []Scope
	for _, f := range strings.Fields(s) {
		out = append(out, Scope(f))
	}
	return out
}
