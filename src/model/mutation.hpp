// Deliberately broken protocol steps, for proving that the model checker catches what it must
// (docs/design/model-checking.md, "Proof that it can fail"). A library line written
//   if (CONTEND_MUTATION(mutex_release_skips_wake)) return;
// is `if (false)` in every build but the model-checking one, where it holds only in the
// executions of a model::plan whose `mutation` names it.
#pragma once

#if CONTEND_MODEL_CHECK
namespace contend::model::hooks {
bool mutation(const char* name) noexcept;
}  // namespace contend::model::hooks
#define CONTEND_MUTATION(name) (::contend::model::hooks::mutation(#name))
#else
#define CONTEND_MUTATION(name) false
#endif
