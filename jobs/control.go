package jobs

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// The control API lets another process reach this process's jobs: the
// 'flinksql stop', 'flinksql savepoint' and 'flinksql jobs' commands talk
// to it over a unix socket the process serves it on (cmd/flinksql says
// where). It is small on purpose:
//
//	GET  /v1/jobs                                  [{"id", "name", "status"}]
//	POST /v1/jobs/{id}/stop?dir=DIR&drain=true     stop with a savepoint: {"savepointPath"}
//	POST /v1/jobs/{id}/savepoint?dir=DIR           savepoint of the running job: {"savepointPath"}
//
// dir is optional (state.savepoints.dir of the job otherwise). Errors are
// {"error": "..."} with status 404 (no such job) or 409 (the job cannot
// take the savepoint now, or writing it failed).

// ControlJob is a job as GET /v1/jobs lists it.
type ControlJob struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Status string `json:"status"`
}

// ControlResult is the answer of a stop or savepoint request.
type ControlResult struct {
	SavepointPath string `json:"savepointPath,omitempty"`
	Error         string `json:"error,omitempty"`
}

// ControlHandler serves the control API for the supervisor's jobs.
func (s *Supervisor) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/jobs", func(w http.ResponseWriter, r *http.Request) {
		out := []ControlJob{}
		for _, j := range s.List() {
			out = append(out, ControlJob{ID: j.ID, Name: j.Name, Status: j.Status})
		}
		writeJSON(w, http.StatusOK, out)
	})
	savepoint := func(stop bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			rj, ok := s.Lookup(r.PathValue("id"))
			if !ok {
				writeJSON(w, http.StatusNotFound, ControlResult{Error: "no job " + r.PathValue("id") + " in this process"})
				return
			}
			dir := r.URL.Query().Get("dir")
			var res ControlResult
			var err error
			if stop {
				drain, _ := strconv.ParseBool(r.URL.Query().Get("drain"))
				if sp, serr := rj.StopWithSavepoint(r.Context(), dir, drain); serr == nil {
					res.SavepointPath = sp.Path
				} else {
					err = serr
				}
			} else if sp, serr := rj.TriggerSavepoint(r.Context(), dir); serr == nil {
				res.SavepointPath = sp.Path
			} else {
				err = serr
			}
			if err != nil {
				writeJSON(w, http.StatusConflict, ControlResult{Error: err.Error()})
				return
			}
			writeJSON(w, http.StatusOK, res)
		}
	}
	mux.HandleFunc("POST /v1/jobs/{id}/stop", savepoint(true))
	mux.HandleFunc("POST /v1/jobs/{id}/savepoint", savepoint(false))
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
