package telemetry

import "testing"

// FuzzHoldsSecret: the pre-filter agrees with the regular expression on
// every string, so that no secret it would match is logged unredacted.
func FuzzHoldsSecret(f *testing.F) {
	for _, s := range []string{
		"", "run_ukmvyk7f5uwsyyxcy62dju33ye", "thread 01a233e6-d649-7265-8ca7-e4f3ca2c2ae4",
		"sk-proj-Ab3xAb3xAb3xAb3xAb3x", "key sk-ant-api03-Zq9_Zq9_Zq9_Zq9_", "Authorization: Bearer abcdefgh12",
		"BEARER\tabcdefgh", "bEaReR x", "baton_" + "0123456789012345678901234567890123456789",
		"AIza0123456789012345678901234567890123", "ghp_012345678901234567890123456789", "AKIA0123456789ABCDEF",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl", "ask-me-anything-please", "a\u212aAKIA0123456789ABCDEF",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := holdsSecret(s), secretValue.MatchString(s); got != want {
			t.Errorf("holdsSecret(%q) = %v, the expression says %v", s, got, want)
		}
	})
}
