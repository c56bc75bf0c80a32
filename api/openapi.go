package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/gofiber/fiber/v2"
	"go.yaml.in/yaml/v3"
)

// openAPIYAML is the OpenAPI 3.1 document of every route, written as YAML
// for the people who keep it (anchors spare the repeated answers);
// openapi_test.go keeps it true to the routes and the answers.
//
//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPI is the document as JSON, as GET /openapi.json serves it.
var OpenAPI = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	return json.Marshal(doc)
})

// openAPI: GET /openapi.json (public).
func (s *Server) openAPI(c *fiber.Ctx) error {
	doc, err := OpenAPI()
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(doc)
}
