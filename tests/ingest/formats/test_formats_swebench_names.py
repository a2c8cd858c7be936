"""Harness and model of real SWE-bench submissions (ingest.formats.swebench_names).

The names are the folder names and metadata of the public experiments repository
(``evaluation/<split>/<folder>``, as listed in SWE-bench/swe-bench.github.io's
data/leaderboards.json): every pattern seen there, including the ones that cannot be
split, which must say so instead of guessing.
"""

from __future__ import annotations

import pytest

from ingest.formats.swebench_names import canonical_harness, parse, parse_folder

FOLDERS = [
    # folder, harness, harness_version, model, qualifier
    ("20250219_mini-SWE-agent_claude-3-7-sonnet", "mini-SWE-agent", None, "claude-3-7-sonnet", None),
    ("20250726_mini-v1.0.0_o3-2025-04-16", "mini-SWE-agent", "1.0.0", "o3-2025-04-16", None),
    ("20250720_mini-v0.0.0-gpt-4o-2024-11-20", "mini-SWE-agent", "0.0.0", "gpt-4o-2024-11-20", None),
    ("20250720_mini-v0.0.0_gpt-4.1-mini-2025-04-14", "mini-SWE-agent", "0.0.0",
     "gpt-4.1-mini-2025-04-14", None),
    ("20250720_mini-v0.0.0-Llama-4-Maverick-17B-Instruct", "mini-SWE-agent", "0.0.0",
     "Llama-4-Maverick-17B-Instruct", None),
    ("20250802_mini-v1.0.0_Qwen3-Coder-480B-A35B-Instruct", "mini-SWE-agent", "1.0.0",
     "Qwen3-Coder-480B-A35B-Instruct", None),
    ("20240620_sweagent_claude3.5sonnet", "SWE-agent", None, "claude3.5sonnet", None),
    ("20250227_sweagent-claude-3-7-20250219", "SWE-agent", None, "claude-3-7-20250219", None),
    ("20240402_sweagent_gpt4", "SWE-agent", None, "gpt4", None),
    ("20250611_moatless_claude-4-sonnet-20250514", "Moatless Tools", None,
     "claude-4-sonnet-20250514", None),
    ("20250524_openhands_claude_4_sonnet", "OpenHands", None, "claude_4_sonnet", None),
    ("20241103_OpenHands-CodeAct-2.1-sonnet-20241022", "OpenHands-CodeAct", "2.1",
     "sonnet-20241022", None),
    ("20241121_autocoderover-v2.0-claude-3-5-sonnet-20241022", "AutoCodeRover", "2.0",
     "claude-3-5-sonnet-20241022", None),
    ("20240615_appmap-navie_gpt4o", "appmap-navie", None, "gpt4o", None),
    ("20250603_Refact_Agent_claude-4-sonnet", "Refact_Agent", None, "claude-4-sonnet", None),
    ("20241016_epam-ai-run-gpt-4o", "epam-ai-run", None, "gpt-4o", None),
    ("20250214_agentless_lite_o3_mini", "agentless_lite", None, "o3_mini", None),
    ("20240918_lingma-agent_lingma-swe-gpt-72b", "lingma-agent", None, "lingma-swe-gpt-72b", None),
    ("20241221_codestory_midwit_claude-3-5-sonnet_swe-search", "codestory_midwit", None,
     "claude-3-5-sonnet", "swe-search"),
    ("20250531_GUIRepair_o4mini", "GUIRepair", None, "o4mini", None),
    ("20250226_swerl_llama3_70b", "swerl", None, "llama3_70b", None),
    ("20250509_OpenHands-Versa_claude3.7", "OpenHands-Versa", None, "claude3.7", None),
    ("20250118_codeshellagent_gemini_2.0_flash_experimental", "codeshellagent", None,
     "gemini_2.0_flash_experimental", None),
    ("20250627_agentless_MCTS-Refine-7B", "Agentless", None, "MCTS-Refine-7B", None),
    ("20231010_rag_swellama7b", "RAG", None, "swellama7b", None),
]


@pytest.mark.parametrize("folder,harness,version,model,qualifier", FOLDERS)
def test_folder_names_of_real_submissions_split(folder, harness, version, model, qualifier):
    r = parse_folder(folder)
    assert (r.harness, r.harness_version, r.model, r.qualifier) == (harness, version, model,
                                                                    qualifier)
    assert r.date == folder[:8] and r.source == "folder" and r.note is None


@pytest.mark.parametrize("folder,harness,version,why", [
    ("20250612_trae", "trae", None, "no model found"),
    ("20250629_deepswerl_r2eagent_tts", "deepswerl_r2eagent_tts", None, "no model found"),
    ("20241113_nebius-search-open-weight-models-11-24", "nebius-search-open-weight-models-11-24",
     None, "no model found"),
    ("20250522_amazon-q-developer-agent-20250405-dev", "amazon-q-developer-agent",
     "20250405-dev", "no model found"),
    ("20250527_amazon.nova-premier-v1.0", None, None, "a model only; no harness"),
])
def test_names_that_cannot_be_split_say_so(folder, harness, version, why):
    r = parse_folder(folder)
    assert (r.harness, r.harness_version) == (harness, version)
    assert r.note is not None and why in r.note and folder in r.note


def _meta(name: str, models: list[str]) -> dict:
    return {"info": {"name": name}, "tags": {"model": models, "org": ["x"]}}


@pytest.mark.parametrize("folder,name,models,harness,version,model", [
    # the mangled name: the model tag never appears verbatim in the display name
    ("20250720_mini-v0.0.0-claude-3-7-sonnet-20250219",
     "mini-SWE-agent + Claude 3.7 Sonnet (20250219)", ["claude-3-7-sonnet-20250219"],
     "mini-SWE-agent", "0.0.0", "claude-3-7-sonnet-20250219"),
    ("20250726_mini-v1.0.0_o3-2025-04-16", "mini-SWE-agent + o3 (2025-04-16)", ["o3-20250416"],
     "mini-SWE-agent", "1.0.0", "o3-20250416"),
    # bash-only leaderboard: the display name is the model alone
    ("20250802_mini-v1.0.0_claude-4-opus-20250514", "Claude 4 Opus (20250514)",
     ["claude-4-opus-20250514"], "mini-SWE-agent", "1.0.0", "claude-4-opus-20250514"),
    ("20250227_sweagent-claude-3-7-20250219", "SWE-agent 1.0 (Claude 3.7 Sonnet)",
     ["claude-3-7-sonnet-20250219"], "SWE-agent", "1.0", "claude-3-7-sonnet-20250219"),
    ("20241103_OpenHands-CodeAct-2.1-sonnet-20241022",
     "OpenHands + CodeAct v2.1 (claude-3-5-sonnet-20241022)", [], "OpenHands + CodeAct", "2.1",
     "claude-3-5-sonnet-20241022"),
    ("20241208_gru", "Gru(2024-12-08)", [], "Gru", "2024-12-08", None),
    ("20241212_epam-ai-run-claude-3-5-sonnet",
     "EPAM AI/Run Developer Agent v20241212 + Anthopic Claude 3.5 Sonnet",
     ["claude-3-5-sonnet-20241022"], "EPAM AI/Run Developer Agent", "20241212",
     "claude-3-5-sonnet-20241022"),
    ("20250226_swerl_llama3_70b", "SWE-RL (Llama3-SWE-RL-70B + Agentless Mini) (20250226)",
     ["Llama3-SWE-RL-70B"], "SWE-RL", "20250226", "Llama3-SWE-RL-70B"),
    ("20250612_trae", "TRAE", ["gemini-2.5-pro-preview-06-05", "claude-4-opus-20250522"],
     "TRAE", None, "claude-4-opus-20250522+gemini-2.5-pro-preview-06-05"),
])
def test_metadata_names_of_real_submissions(folder, name, models, harness, version, model):
    r = parse(folder, _meta(name, models))
    assert (r.harness, r.harness_version, r.model) == (harness, version, model)
    assert r.source == "metadata"


@pytest.mark.parametrize("folder,name,models,harness,version,model", [
    # piyushhhxyz/vorflux-swe-benchmarks, evaluation/verified/: models in the parenthesis
    ("20250519_vorflux_opus46-code_gpt55h-review", "Vorflux (Opus 4.6 Code + GPT-5.5 High Review)",
     ["claude-opus-4-6", "gpt-5.5-high"], "Vorflux", None, "claude-opus-4-6+gpt-5.5-high"),
    ("20250226_swerl_llama3_70b", "SWE-RL (Llama3-SWE-RL-70B + Agentless Mini) (20250226)",
     ["Llama3-SWE-RL-70B"], "SWE-RL", "20250226", "Llama3-SWE-RL-70B"),
    ("20250101_agentx_model-a", "AgentX (model-a)", ["model-a"], "AgentX", None, "model-a"),
])
def test_submission_name_takes_the_model_ids_out_and_keeps_parentheses_balanced(
        folder, name, models, harness, version, model):
    from ingest.formats.swebench import submission_name

    r = submission_name(folder, _meta(name, models))
    assert (r.harness, r.harness_version, r.model) == (harness, version, model)
    assert r.note is None


def test_six_submissions_of_one_harness_are_one_harness():
    subs = [("20250726_mini-v1.0.0_o3-2025-04-16", "mini-SWE-agent + o3 (2025-04-16)"),
            ("20250802_mini-v1.0.0_claude-4-opus-20250514", "Claude 4 Opus (20250514)"),
            ("20250726_mini-v1.0.0_gemini-2.5-pro", "mini-SWE-agent + Gemini 2.5 Pro (2025-05-06)"),
            ("20250720_mini-v0.0.0-gpt-4o-2024-11-20", "mini-SWE-agent + GPT-4o (2024-11-20)"),
            ("20250720_mini-v0.0.0-Llama-4-Scout-17B-Instruct", "Llama 4 Scout Instruct"),
            ("20250219_mini-SWE-agent_claude-3-7-sonnet", None)]
    harnesses = {parse(f, _meta(n, []) if n else None).harness for f, n in subs}
    assert harnesses == {"mini-SWE-agent"}
    assert canonical_harness("sweagent") == canonical_harness("SWE-agent") == "SWE-agent"


def test_a_display_name_without_harness_or_model_keeps_what_is_known():
    r = parse("20250629_deepswerl_r2eagent_tts", _meta("DeepSWE-Preview", []))
    assert r.harness == "DeepSWE-Preview" and r.model is None
    assert "no model in metadata.yaml" in r.note
    bare = parse("20250527_amazon.nova-premier-v1.0",
                 _meta("Amazon Nova Premier 1.0 (2025-04-30)", ["amazon.nova-premier-v1:0"]))
    assert bare.model == "amazon.nova-premier-v1:0" and bare.harness is None
    assert "no harness" in bare.note
