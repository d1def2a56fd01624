"""Studies over the memory and the evaluator prompt (ablation, ICL sweeps, sensitivity): arriving with the studies issue."""
