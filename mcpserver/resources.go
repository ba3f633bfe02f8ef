package mcpserver

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/batonhq/baton/ops"
)

const (
	workflowPrefix = "baton://workflows/"
	instancePrefix = "baton://instances/"
)

// WorkflowURI is the resource of workflow name's YAML.
func WorkflowURI(name string) string { return workflowPrefix + url.PathEscape(name) }

// addResourceTemplates adds the instances' resources.
func (s *Server) addResourceTemplates() {
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "instance", URITemplate: instancePrefix + "{id}", MIMEType: "application/json",
		Description: "An instance, as get_instance answers it.",
	}, s.readInstance)
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "history", URITemplate: instancePrefix + "{id}/history", MIMEType: "application/json",
		Description: "An instance's history, the form wfrun replay reads.",
	}, s.readInstance)
	s.sdk.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "workflow", URITemplate: workflowPrefix + "{name}", MIMEType: "application/yaml",
		Description: "A workflow's YAML (its current version).",
	}, s.readWorkflow)
}

// syncResources lists the workflows as resources. Call it under s.mu.
func (s *Server) syncResources(wfs []Workflow) {
	want := map[string]bool{}
	for _, wf := range wfs {
		uri := WorkflowURI(wf.Name)
		want[uri] = true
		if !s.wfs[uri] {
			s.wfs[uri] = true
			s.sdk.AddResource(&mcp.Resource{
				Name: wf.Name, URI: uri, MIMEType: "application/yaml",
				Description: "The YAML of workflow " + wf.Name + ".",
			}, s.readWorkflow)
		}
	}
	var gone []string
	for uri := range s.wfs {
		if !want[uri] {
			gone = append(gone, uri)
			delete(s.wfs, uri)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveResources(gone...)
	}
}

// readWorkflow answers a workflow's YAML, read at the time of the call so
// that a reload shows at once.
func (s *Server) readWorkflow(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	name, err := url.PathUnescape(strings.TrimPrefix(uri, workflowPrefix))
	if err != nil || !strings.HasPrefix(uri, workflowPrefix) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	wfs, err := s.back.Workflows(ctx)
	if err != nil {
		return nil, err
	}
	for _, wf := range wfs {
		if wf.Name == name {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/yaml", Text: string(wf.Source)}}}, nil
		}
	}
	return nil, mcp.ResourceNotFoundError(uri)
}

// readInstance answers an instance, or its history, as the HTTP API does.
func (s *Server) readInstance(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, instancePrefix)
	rest, history := strings.CutSuffix(rest, "/history")
	id, err := url.PathUnescape(rest)
	if !ok || err != nil || id == "" || strings.Contains(rest, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	var v any
	if history {
		v, err = s.back.History(ctx, id)
	} else {
		v, err = s.back.Get(ctx, id)
	}
	if errors.Is(err, ops.ErrNotFound) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	data, err := encode(v)
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(data)}}}, nil
}
