package sdkconfig

import (
	"errors"
	"net/http"
	"slices"
	"testing"
)

func TestCheckBaseURL(t *testing.T) {
	t.Parallel()
	errConfig := errors.New("x: invalid config")
	for _, ok := range []string{"http://localhost:11434/v1", "https://api.example.com/"} {
		if err := CheckBaseURL(ok, errConfig); err != nil {
			t.Errorf("CheckBaseURL(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "localhost:8080", "ftp://x/", "http://", "http://a b/", "/v1"} {
		if err := CheckBaseURL(bad, errConfig); !errors.Is(err, errConfig) {
			t.Errorf("CheckBaseURL(%q) = %v, want %v", bad, err, errConfig)
		}
	}
}

func TestClientAndHeaders(t *testing.T) {
	t.Parallel()
	if c := Client(nil); c == nil || c.Timeout != 0 {
		t.Errorf("Client(nil) = %+v, want a client without a timeout", c)
	}
	hc := &http.Client{}
	if Client(hc) != hc {
		t.Error("Client(hc) is not hc")
	}
	got := Headers(map[string]string{"b": "2", "a": "1", "c": "3"}, func(k, v string) string { return k + "=" + v })
	if want := []string{"a=1", "b=2", "c=3"}; !slices.Equal(got, want) {
		t.Errorf("Headers = %v, want %v", got, want)
	}
}
