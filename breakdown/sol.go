package breakdown

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"

	"github.com/stepstat/stepstat/nsys"
)

// This file holds the speed-of-light view of a trace's limits: the measured step against a
// floor the user gives, or that a byte count and a memory bandwidth give. ranks.go holds
// the other view, the rank view.

// A SOL compares a device's measured step with a speed-of-light floor: the shortest step
// the hardware allows, as the user states it (Options.SOLStep) or as bytes that every step
// must move through memory over the memory bandwidth (Options.SOLBytes, Options.Bandwidth
// or the GPU's datasheet bandwidth).
type SOL struct {
	Floor time.Duration
	// Bytes and Bandwidth (bytes per second) give Floor = Bytes / Bandwidth; both are 0
	// when the floor was given as a step time.
	Bytes     int64
	Bandwidth float64
	// Source says where the floor or the bandwidth came from; with SourceDatasheet,
	// Datasheet is the assumption, e.g. "H200 datasheet HBM3e bandwidth".
	Source    SOLSource
	Datasheet string
	// Measured is the median step of the summarised phase (DeviceReport.Summary.Median);
	// 0 when there is no step, and then the ratios below are 0 too.
	Measured   time.Duration
	Ratio      float64 // Measured / Floor
	Efficiency float64 // Floor / Measured
	// TokensPerSec is per sequence (one token per decode step: 1 / Measured);
	// TotalTokensPerSec is Batch / Measured, 0 when Batch is not given.
	TokensPerSec      float64
	Batch             int
	TotalTokensPerSec float64
}

// A SOLSource says where a speed-of-light floor or its bandwidth came from.
type SOLSource uint8

const (
	SourceStep      SOLSource = iota + 1 // the floor was given as a step time (Options.SOLStep)
	SourceBandwidth                      // bytes over the bandwidth given (Options.Bandwidth)
	SourceDatasheet                      // bytes over the GPU's datasheet bandwidth (SOL.Datasheet)
)

// ErrNoBandwidth is wrapped by the error Summarize returns (an OptionError for OptSOLBytes)
// when Options.SOLBytes is set without Options.Bandwidth and a device's GPU is not in the
// datasheet table.
var ErrNoBandwidth = errors.New("memory bandwidth unknown")

// A datasheetGPU is a GPU whose memory bandwidth the datasheet gives.
type datasheetGPU struct {
	match     *regexp.Regexp // on nsys.Device.Name, e.g. "NVIDIA H200"
	name, mem string
	bandwidth float64 // bytes per second
}

// datasheetGPUs lists datasheet memory bandwidths, matched on the device name. Word
// boundaries keep GH200 and GB200 (other bandwidths) out of H200 and B200; the H100 NVL
// (3.9 TB/s) and other H100 variants match neither H100 row.
var datasheetGPUs = []datasheetGPU{
	{regexp.MustCompile(`(?i)\bH100\b.*\bPCIe\b`), "H100 PCIe", "HBM2e", 2.0e12},
	{regexp.MustCompile(`(?i)\bH100\b.*\b(SXM\d?|HBM3)\b`), "H100 SXM", "HBM3", 3.35e12},
	{regexp.MustCompile(`(?i)\bH200\b`), "H200", "HBM3e", 4.8e12},
	{regexp.MustCompile(`(?i)\bB200\b`), "B200", "HBM3e", 8.0e12},
	{regexp.MustCompile(`(?i)\bRTX PRO 6000 Blackwell\b`), "RTX PRO 6000 Blackwell", "GDDR7", 1.792e12},
}

// DatasheetBandwidth returns the datasheet memory bandwidth (bytes per second) of a GPU
// by its device name (nsys.Device.Name, e.g. "NVIDIA H200"), and the assumption it makes in
// words ("H200 datasheet HBM3e bandwidth"). ok is false for a GPU not in the table: H100
// SXM 3.35 TB/s, H100 PCIe 2.0 TB/s, H200 4.8 TB/s, B200 8.0 TB/s, RTX PRO 6000
// Blackwell 1.792 TB/s.
func DatasheetBandwidth(gpu string) (bytesPerSec float64, assumption string, ok bool) {
	for _, g := range datasheetGPUs {
		if g.match.MatchString(gpu) {
			return g.bandwidth, g.name + " datasheet " + g.mem + " bandwidth", true
		}
	}
	return 0, "", false
}

// floorAboveWarning says that the floor is above the measured step, which a floor cannot
// be (it is the shortest step the hardware allows), and names the likely unit mistake.
func floorAboveWarning(dev nsys.DeviceID, s *SOL) error {
	msg := fmt.Sprintf("device %d: the speed-of-light floor %s is above the measured median step %s (%s \"efficient\"), and a floor is the shortest step the hardware allows: ",
		dev, FormatDuration(int64(s.Floor)), FormatDuration(int64(s.Measured)), FormatPercent(s.Efficiency))
	switch s.Source {
	case SourceBandwidth:
		gbs := s.Bandwidth / 1e9
		msg += fmt.Sprintf("the bandwidth given is %.4g GB/s", gbs)
		if gbs < 100 {
			msg += fmt.Sprintf(", a value in TB/s? (%.4g TB/s is %.4g GB/s)", gbs, gbs*1000)
		}
		msg += fmt.Sprintf("; or the %s per step counts bits, or more than one GPU's bytes", fmt.Sprintf("%.4g GB", float64(s.Bytes)/1e9))
	case SourceDatasheet:
		msg += fmt.Sprintf("check the %s per step (bytes, not bits; one GPU's share under tensor parallelism, not the whole model's)", fmt.Sprintf("%.4g GB", float64(s.Bytes)/1e9))
	default:
		msg += "check the floor's unit (µs or ms) and that it is one step's, not a run's"
	}
	return errors.New(msg)
}

// deviceSOL computes the speed-of-light view of one device; nil without a floor.
func deviceSOL(dr *DeviceReport, opt Options) (*SOL, error) {
	s := &SOL{Batch: opt.Batch}
	switch {
	case opt.SOLStep > 0:
		s.Floor, s.Source = opt.SOLStep, SourceStep
	case opt.SOLBytes > 0:
		s.Bytes, s.Bandwidth, s.Source = opt.SOLBytes, opt.Bandwidth, SourceBandwidth
		if s.Bandwidth == 0 {
			bw, what, ok := DatasheetBandwidth(dr.GPU)
			if !ok {
				gpu := dr.GPU
				if gpu == "" {
					gpu = "name not in the export"
				}
				return nil, &OptionError{Option: OptSOLBytes, Err: fmt.Errorf("%w: device %d (%s) is not in the datasheet table (H100 SXM/PCIe, H200, B200, RTX PRO 6000 Blackwell)",
					ErrNoBandwidth, dr.Device, gpu)}
			}
			s.Bandwidth, s.Source, s.Datasheet = bw, SourceDatasheet, what
		}
		ns := float64(s.Bytes) / s.Bandwidth * 1e9
		if !floorFits(ns) { // a datasheet bandwidth with bytes past any step
			return nil, &OptionError{Option: OptSOLBytes, Err: fmt.Errorf("%.4g GB over the %s give a floor of %.3g s, out of range (%w)",
				float64(s.Bytes)/1e9, s.Datasheet, ns/1e9, ErrFloorRange)}
		}
		s.Floor = time.Duration(math.Round(ns))
	default:
		return nil, nil
	}
	s.Measured = dr.Summary.Median
	if s.Measured > 0 && s.Floor > 0 {
		s.Ratio = float64(s.Measured) / float64(s.Floor)
		s.Efficiency = float64(s.Floor) / float64(s.Measured)
	}
	if s.Measured > 0 && s.Floor > s.Measured {
		dr.Warnings = append(dr.Warnings, floorAboveWarning(dr.Device, s))
	}
	if s.Measured > 0 {
		s.TokensPerSec = 1e9 / float64(s.Measured)
		s.TotalTokensPerSec = float64(s.Batch) * s.TokensPerSec
	}
	return s, nil
}
