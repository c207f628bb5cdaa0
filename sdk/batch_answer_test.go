package sdk

import (
	"context"
	"strings"
	"testing"

	pb "github.com/bulwark-iac/bulwark/sdk/proto/providerv1"
)

// misbehaving is a provider whose batch calls (ReadMany, CreateMany) answer
// as its mode says, so that what Serve makes of a batch that went wrong is
// seen on both calls alike (they share answerMany).
type misbehaving struct {
	recorder
	mode string
}

// answer is what a batch of n answers: results made by one, unless the mode
// spoils them.
func misbehave[R any](mode string, n int, one func(i int) R, withDiags func([]R, Diagnostics) any) (any, error) {
	results := make([]R, n)
	for i := range results {
		results[i] = one(i)
	}
	switch mode {
	case "no response":
		return nil, nil
	case "call error":
		return nil, context.DeadlineExceeded
	case "whole call diagnostic":
		return withDiags(results, Diagnostics{Errorf("the batch failed as a whole")}), nil
	case "too few":
		return withDiags(results[:n-1], nil), nil
	case "nil result":
		var zero R
		results[1] = zero
		return withDiags(results, nil), nil
	case "panic":
		panic("batch went wrong")
	}
	return withDiags(results, nil), nil
}

func (m *misbehaving) ReadMany(_ context.Context, req *ReadManyRequest) (*ReadManyResponse, error) {
	r, err := misbehave(m.mode, len(req.Reads), func(i int) *ReadResponse {
		return &ReadResponse{Exists: true, ID: "id-" + req.Reads[i].Name}
	}, func(rs []*ReadResponse, ds Diagnostics) any { return &ReadManyResponse{Results: rs, Diagnostics: ds} })
	resp, _ := r.(*ReadManyResponse)
	return resp, err
}

func (m *misbehaving) CreateMany(_ context.Context, req *CreateManyRequest) (*CreateManyResponse, error) {
	r, err := misbehave(m.mode, len(req.Creates), func(i int) *CreateResponse {
		return &CreateResponse{ID: "id-" + req.Creates[i].Name}
	}, func(rs []*CreateResponse, ds Diagnostics) any {
		return &CreateManyResponse{Results: rs, Diagnostics: ds}
	})
	resp, _ := r.(*CreateManyResponse)
	return resp, err
}

// A batch that goes wrong as a whole fails every request of the call with
// the reason, and one that leaves a result out fails that request alone:
// never a result that looks like an answer, on ReadMany and CreateMany
// alike.
func TestServerBatchThatGoesWrong(t *testing.T) {
	tests := []struct {
		mode      string
		wholeCall string // the whole call's error ("": none)
		second    string // the second request's own error, when the call has none
	}{
		{mode: "fine"},
		{mode: "no response", wholeCall: "provider returned no %s response"},
		{mode: "call error", wholeCall: "deadline exceeded"},
		{mode: "whole call diagnostic", wholeCall: "the batch failed as a whole"},
		{mode: "too few", wholeCall: "provider answered 2 of 3 %s"},
		{mode: "nil result", second: "provider returned no result for this %s"},
		{mode: "panic", wholeCall: "provider panicked: batch went wrong"},
	}
	calls := []struct {
		call, noun string
		run        func(s *server) (results []string, secondErr string, whole []*pb.Diagnostic, err error)
	}{
		{"ReadMany", "reads", func(s *server) ([]string, string, []*pb.Diagnostic, error) {
			var reads []*pb.Read_Request
			for _, n := range []string{"a", "b", "c"} {
				reads = append(reads, &pb.Read_Request{Type: "bucket", Name: n, Id: "x"})
			}
			resp, err := s.ReadMany(context.Background(), &pb.ReadMany_Request{Reads: reads})
			if err != nil {
				return nil, "", nil, err
			}
			var ids []string
			second := ""
			for i, r := range resp.GetResults() {
				ids = append(ids, r.GetId())
				if i == 1 && len(r.GetDiagnostics()) > 0 {
					second = r.GetDiagnostics()[0].GetSummary()
				}
			}
			return ids, second, resp.GetDiagnostics(), nil
		}},
		{"CreateMany", "creates", func(s *server) ([]string, string, []*pb.Diagnostic, error) {
			var creates []*pb.Create_Request
			for _, n := range []string{"a", "b", "c"} {
				creates = append(creates, &pb.Create_Request{Type: "bucket", Name: n, Config: dyn(t, Attributes{"name": n, "id_hint": "h"}), IdempotencyKey: "op_1/" + n})
			}
			resp, err := s.CreateMany(context.Background(), &pb.CreateMany_Request{Creates: creates})
			if err != nil {
				return nil, "", nil, err
			}
			var ids []string
			second := ""
			for i, r := range resp.GetResults() {
				ids = append(ids, r.GetId())
				if i == 1 && len(r.GetDiagnostics()) > 0 {
					second = r.GetDiagnostics()[0].GetSummary()
				}
			}
			return ids, second, resp.GetDiagnostics(), nil
		}},
	}
	for _, c := range calls {
		for _, tt := range tests {
			t.Run(c.call+"/"+tt.mode, func(t *testing.T) {
				ids, second, whole, err := c.run(newServer(&misbehaving{mode: tt.mode}))
				if err != nil {
					t.Fatal(err)
				}
				if tt.wholeCall != "" {
					want := strings.ReplaceAll(tt.wholeCall, "%s", c.call)
					if tt.mode == "too few" {
						want = strings.ReplaceAll(tt.wholeCall, "%s", c.noun)
					}
					if len(whole) == 0 || !strings.Contains(whole[len(whole)-1].GetSummary()+whole[0].GetSummary(), want) {
						t.Errorf("call diagnostics %v, want one with %q", whole, want)
					}
					if len(ids) != 0 {
						t.Errorf("results %v of a call that failed as a whole: want none", ids)
					}
					return
				}
				if len(whole) != 0 {
					t.Errorf("call diagnostics %v, want none", whole)
				}
				if tt.second != "" {
					want := strings.ReplaceAll(tt.second, "%s", strings.TrimSuffix(c.noun, "s"))
					if !strings.Contains(second, want) || ids[1] != "" {
						t.Errorf("second result id %q, error %q: want no id and %q", ids[1], second, want)
					}
					if ids[0] != "id-a" || ids[2] != "id-c" {
						t.Errorf("results %v: the others still answered", ids)
					}
					return
				}
				if strings.Join(ids, ",") != "id-a,id-b,id-c" || second != "" {
					t.Errorf("results %v (second's error %q), want id-a,id-b,id-c", ids, second)
				}
			})
		}
	}
}
