/*
 * model.h: building a Neuron model from a manifest, operand by operand, optionally cut after
 * the first `n_ops` operations (the bisection tool: the model's outputs are then the tensors
 * still live at the cut, i.e. produced before it and read after it, or model outputs).
 */
#ifndef MDLA_MODEL_H
#define MDLA_MODEL_H

#include "adapter.h"
#include "manifest.h"

typedef struct {
    uint32_t n_ops;
    const uint32_t *ops; /* the manifest operations built, in order; NULL: the first n_ops */
    uint32_t *map;      /* manifest operand -> model operand, UINT32_MAX when unused */
    uint32_t n_inputs;  /* model inputs: manifest inputs the first n_ops read */
    uint32_t *inputs;   /* their manifest operand indices */
    uint32_t *input_pos; /* their positions in the manifest's input list */
    uint32_t n_outputs;
    uint32_t *outputs;  /* manifest operand indices of the model outputs */
} mdla_plan;

bool plan_make(const mdla_manifest *m, uint32_t n_ops, mdla_plan *p);
/* One partition as its own model (issue 17): its operations; its inputs and outputs are the
 * partition's boundary operands, in the manifest's order (input_pos unused: all zero). */
bool plan_make_partition(const mdla_manifest *m, const mdla_partition *part, mdla_plan *p);
void plan_free(mdla_plan *p);

typedef struct {
    int code;        /* Neuron result, NEURON_NO_ERROR on success */
    const char *call; /* the function that failed */
    long op;         /* operation index, or -1 */
    long operand;    /* manifest operand index, or -1 */
} build_error;

/* Adds the operands and operations, identifies inputs/outputs and finishes the model. */
bool model_build(const neuron_api *api, const mdla_manifest *m, const mdla_plan *p,
                 NeuronModel **model, build_error *err);

#endif /* MDLA_MODEL_H */
