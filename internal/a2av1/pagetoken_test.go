package a2av1

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// FuzzPushToken: parsing any page token either fails with
// ErrInvalidParams or gives a cursor whose token parses back to it.
func FuzzPushToken(f *testing.F) {
	f.Add(PushCursor{Created: 1764662400000000, ID: "cfg"}.String())
	f.Add("")
	f.Add("eC8")
	f.Add(base64.RawURLEncoding.EncodeToString([]byte("0/a/b")))
	f.Fuzz(func(t *testing.T, token string) {
		c, err := ParsePushToken(token)
		if err != nil {
			if !errors.Is(err, a2a.ErrInvalidParams) {
				t.Fatalf("token %q: %v, not invalid params", token, err)
			}
			return
		}
		again, err := ParsePushToken(c.String())
		if err != nil || again != c {
			t.Fatalf("token %q: %+v gives %q, read back %+v, %v", token, c, c.String(), again, err)
		}
	})
}
