package netspec

import (
	"errors"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

var schemaPrinter = message.NewPrinter(language.English)

// memURL matches the in-memory URLs schemas are compiled under, which mean
// nothing to the author of the file.
var memURL = regexp.MustCompile(`"?mem://schema/[0-9]+\.json#?"?\s*`)

// schemaMessage turns a schema compilation error into one line that says
// where in the schema the problem is: "invalid JSON Schema at /type: value
// must be one of 'array', 'boolean', …".
func schemaMessage(err error) string {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return memURL.ReplaceAllString(err.Error(), "")
	}
	var locs []string
	byLoc := map[string]string{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			// The first cause at a location says it best: anyOf branches
			// ("must be one of …", "want array") only repeat it.
			if _, seen := byLoc[loc]; !seen {
				locs = append(locs, loc)
				byLoc[loc] = e.ErrorKind.LocalizedString(schemaPrinter)
			}
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	parts := make([]string, 0, len(locs))
	for _, loc := range locs {
		parts = append(parts, "at "+loc+": "+byLoc[loc])
	}
	return "invalid JSON Schema " + strings.Join(parts, "; ")
}
