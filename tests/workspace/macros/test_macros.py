"""Frozen macros (docs/workspace.md, "Frozen macros"): every rule of the table."""

from __future__ import annotations

from typing import Any

import pytest

from tavernlab.errors import TavernlabError
from tavernlab.workspace.macros import FrozenMacros
from tavernlab.workspace.macros._macros import MACRO_LIMIT_BYTES, MacroError, MacroLimitExceeded

SNAPSHOT: dict[str, Any] = {
    "macroContext": {
        "names": {"user": "Bob", "char": "Frozen Alice", "groupNotMuted": "Alice, Carol",
                  "notChar": "Bob"},
        "character": {
            "firstMessage": "Hello there.",
            "description": "A frozen witch.",
            "personality": "curious",
            "scenario": "a snowy inn",
            "creatorNotes": "notes",
            "version": 3,
            "charJailbreak": "stay in character",
            "persona": "traveller",
            "mesExamples": "<START>",
            "alternateGreetings": ["Second hello.", "Third hello."],
        },
        "system": {"model": "gpt-test"},
        "chat": {"lastMessageId": 12, "lastSwipeId": 2, "currentSwipeId": 1},
        "variableValues": {"local": {"mood": "calm", "count": "4"},
                           "global": {"season": "winter"}},
        "builtins": {"maxPrompt": "8192", "instructInput": "<user>", "idleDuration": "5 min",
                     "defaultSystemPrompt": "Be kind.", "chatSeparator": "***",
                     "instructFirstOutput": "<first>"},
    },
    "extensionPrompts": {"customWIOutlet_lore": {"value": "The inn is old.", "position": 1},
                         "other": {"value": 7}},
}


@pytest.fixture
def macros() -> FrozenMacros:
    return FrozenMacros.from_snapshot(SNAPSHOT)


# --- Acceptance 1-7 ---------------------------------------------------------------------------


def test_acceptance_1_lookup_is_case_insensitive(macros: FrozenMacros) -> None:
    assert macros.render("{{CHAR}}|{{char}}|{{Char}}") == "Frozen Alice|Frozen Alice|Frozen Alice"
    assert macros.render("{{charFirstMessage}}") == macros.render("{{greeting}}") == "Hello there."


def test_acceptance_2_inserted_values_are_not_rescanned() -> None:
    table = FrozenMacros.from_snapshot(
        {"macroContext": {"names": {"char": "{{user}}", "user": "Bob"}}})
    assert table.render("{{char}} and {{user}}") == "{{user}} and Bob"


def test_acceptance_3_unknown_nested_and_unterminated_stay_literal(macros: FrozenMacros) -> None:
    assert macros.render("{{unknown}}") == "{{unknown}}"
    assert macros.render("{{getvar::{{char}}}}") == "{{getvar::{{char}}}}"
    assert macros.render("{{char") == "{{char"
    assert macros.render("x {{char}} {{char") == "x Frozen Alice {{char"
    assert macros.render("{{user}}: {{oops {{user}}") == "Bob: {{oops {{user}}"
    assert macros.render("\\{{user") == "\\{{user"
    assert macros.render("\\\\{{unknown}}") == "\\{{unknown}}"


def test_acceptance_4_backslash_escapes(macros: FrozenMacros) -> None:
    assert macros.render("\\{{char}}") == "{{char}}"
    assert macros.render("\\\\{{char}}") == "\\Frozen Alice"
    assert macros.render("\\\\\\{{char}}") == "\\{{char}}"
    # backslashes elsewhere are untouched
    assert macros.render("C:\\\\dir {{user}} \\n") == "C:\\\\dir Bob \\n"


def test_acceptance_5_greeting_with_an_index(macros: FrozenMacros) -> None:
    assert macros.render("{{greeting::0}}") == "Hello there."
    assert macros.render("{{greeting::1}}") == "Second hello."
    assert macros.render("{{charFirstMessage:: 2 }}") == "Third hello."
    one_alternate = FrozenMacros.from_snapshot({"macroContext": {
        "character": {"firstMessage": "Hi"}, "alternateGreetings": ["Only one"]}})
    assert one_alternate.render("{{greeting::9}}") == ""
    assert one_alternate.render("{{greeting::-1}}") == ""
    assert one_alternate.render("{{greeting::x}}") == "{{greeting::x}}"
    assert one_alternate.render("{{greeting::1.5}}") == "{{greeting::1.5}}"


def test_acceptance_6_variables_frozen_or_not(macros: FrozenMacros) -> None:
    assert macros.render("[{{getvar::missing}}]") == "[]"
    assert macros.render("{{getvar::mood}} {{getvar::count}}") == "calm 4"
    assert macros.render("{{hasvar::mood}} {{hasvar::missing}}") == "true false"
    assert macros.render("{{varexists::mood}}") == "true"
    not_frozen = FrozenMacros.from_snapshot({"macroContext": {"names": {"char": "A"}}})
    assert not_frozen.render("{{getvar::missing}}") == "{{getvar::missing}}"
    assert not_frozen.render("{{hasvar::missing}}") == "{{hasvar::missing}}"


def test_acceptance_7_bad_values_and_oversized_input() -> None:
    with pytest.raises(MacroError) as caught:
        FrozenMacros.from_snapshot(
            {"macroContext": {"variableValues": {"local": {"flag": True}}}})
    assert caught.value.code == "agent.invalid_macro_context"
    assert caught.value.message == "macroContext.variableValues.local.flag must be a string"
    assert isinstance(caught.value, TavernlabError)
    with pytest.raises(MacroLimitExceeded) as too_big:
        FrozenMacros.from_snapshot(None).render("x" * (MACRO_LIMIT_BYTES + 1))
    assert too_big.value.message == "macro input exceeds 16777216 bytes"
    assert too_big.value.code == "agent.macro_limit_exceeded"


# --- the table -------------------------------------------------------------------------------


def test_field_aliases(macros: FrozenMacros) -> None:
    rendered = macros.render(
        "{{description}}/{{charDescription}}|{{personality}}/{{charPersonality}}|"
        "{{scenario}}/{{charScenario}}|{{creatorNotes}}/{{charCreatorNotes}}|"
        "{{version}}/{{charVersion}}/{{char_version}}|{{model}}|{{persona}}|{{mesExamples}}|"
        "{{groupNotMuted}}|{{notChar}}")
    assert rendered == ("A frozen witch./A frozen witch.|curious/curious|"
                        "a snowy inn/a snowy inn|notes/notes|3/3/3|gpt-test|traveller|"
                        "<START>|Alice, Carol|Bob")


def test_numbers_are_stringified(macros: FrozenMacros) -> None:
    assert macros.render("{{lastMessageId}}/{{lastSwipeId}}/{{currentSwipeId}}") == "12/2/1"
    floats = FrozenMacros.from_snapshot({"macroContext": {"chat": {"lastMessageId": 1.5}}})
    assert floats.render("{{lastmessageid}}") == "1.5"


def test_group_names_and_charifnotgroup_fallback(macros: FrozenMacros) -> None:
    assert macros.render("{{charIfNotGroup}}") == "Frozen Alice"
    assert macros.render("{{group}}") == "{{group}}"
    grouped = FrozenMacros.from_snapshot(
        {"macroContext": {"names": {"char": "A", "group": "A, B"}}})
    assert grouped.render("{{group}}|{{charifnotgroup}}") == "A, B|A, B"


def test_fallbacks_fill_only_absent_names(macros: FrozenMacros) -> None:
    assert macros.render("{{charInstruction}}|{{charJailbreak}}") == (
        "stay in character|stay in character")
    assert macros.render("{{maxPromptTokens}}|{{maxPrompt}}") == "8192|8192"
    assert macros.render("{{instructUserPrefix}}|{{idle_duration}}") == "<user>|5 min"
    assert macros.render("{{instructSystem}}|{{instructSystemPrompt}}") == "Be kind.|Be kind."
    assert macros.render("{{exampleSeparator}}") == "***"
    assert macros.render("{{instructFirstAssistantPrefix}}|{{instructFirstOutputPrefix}}") == (
        "<first>|<first>")
    both = FrozenMacros.from_snapshot({"macroContext": {
        "character": {"charInstruction": "I", "charJailbreak": "J"},
        "builtins": {"maxPrompt": "1", "maxPromptTokens": "2"}}})
    assert both.render("{{charinstruction}}{{charjailbreak}}{{maxprompttokens}}") == "IJ2"


def test_builtins_are_lower_cased_and_replace_fields() -> None:
    table = FrozenMacros.from_snapshot({"macroContext": {
        "names": {"char": "Field"}, "builtins": {"Char": "Builtin", "IsMobile": "false"}}})
    assert table.render("{{char}}|{{ismobile}}|{{ISMOBILE}}") == "Builtin|false|false"
    # the group a script sees keeps the field
    groups = table.context_macro()
    assert groups is not None and groups["names"]["char"] == "Field"
    with pytest.raises(MacroError, match="defines `maxprompt` more than once"):
        FrozenMacros.from_snapshot(
            {"macroContext": {"builtins": {"maxPrompt": "1", "MAXPROMPT": "2"}}})


def test_constants_work_without_a_host_context() -> None:
    empty = FrozenMacros.from_snapshot(None)
    assert empty.render("a{{space}}b{{newline}}c{{noop}}d") == "a b\ncd"
    assert empty.render("{{char}} {{getvar::x}} {{getglobalvar::x}} {{outlet::x}}") == (
        "{{char}} {{getvar::x}} {{getglobalvar::x}} {{outlet::x}}")
    assert empty.render("{{greeting::0}}") == "{{greeting::0}}"
    assert not empty.has_context
    assert empty.context_macro() is None


def test_global_variables_and_outlets(macros: FrozenMacros) -> None:
    assert macros.render("{{getglobalvar::season}}|{{getglobalvar::nope}}|") == "winter||"
    assert macros.render("{{hasglobalvar::season}} {{globalvarexists::nope}}") == "true false"
    assert macros.render("{{outlet::lore}}|{{outlet::other}}|") == "The inn is old.||"
    assert macros.render("{{ getvar :: mood }}") == "calm"


def test_more_than_one_double_colon_stays_literal(macros: FrozenMacros) -> None:
    assert macros.render("{{getvar::a::b}}") == "{{getvar::a::b}}"
    assert macros.render("{{char::x}}") == "{{char::x}}"


def test_stray_braces(macros: FrozenMacros) -> None:
    assert macros.render("}}{{char}}}}") == "}}Frozen Alice}}"
    assert macros.render("{{{char}}}") == "{{{char}}}"
    assert macros.render("{{a {{user}}") == "{{a {{user}}"  # {{a is unterminated
    assert macros.render("{{user}} }} {{user}}") == "Bob }} Bob"


def test_construction_failures() -> None:
    cases: list[tuple[Any, str]] = [
        ({"macroContext": {"names": ["x"]}}, "macroContext.names must be an object"),
        ({"macroContext": {"character": {"description": None}}},
         "macroContext.character.description must be a string or a number"),
        ({"macroContext": {"system": {"model": {"id": 1}}}},
         "macroContext.system.model must be a string or a number"),
        ({"macroContext": {"variableValues": {"global": {"list": [1]}}}},
         "macroContext.variableValues.global.list must be a string"),
        ({"macroContext": {"variableValues": "x"}},
         "macroContext.variableValues must be an object"),
        ({"macroContext": {"alternateGreetings": "x"}},
         "macroContext.alternateGreetings must be an array"),
        ({"macroContext": {"character": {"alternateGreetings": {"0": "x"}}}},
         "macroContext.character.alternateGreetings must be an array"),
        ({"macroContext": {"character": {"alternateGreetings": ["a", 2]}}},
         "macroContext.character.alternateGreetings[1] must be a string"),
        ({"macroContext": {"alternateGreetings": [None],
                           "character": {"alternateGreetings": ["a"]}}},
         "macroContext.alternateGreetings[0] must be a string"),
        ({"macroContext": {"builtins": {"a": None}}}, "macroContext.builtins.a must be a string"),
        ({"macroContext": "x"}, "macroContext must be an object"),
        ({"extensionPrompts": {"customWIOutlet_a": {"value": 3}}},
         "extensionPrompts.customWIOutlet_a.value must be a string"),
        ({"extensionPrompts": {"customWIOutlet_a": {"text": "x"}}},
         "extensionPrompts.customWIOutlet_a.value must be a string"),
        ({"extensionPrompts": {"customWIOutlet_a": 3}},
         "extensionPrompts.customWIOutlet_a must be a string"),
        ({"extensionPrompts": ["x"]}, "extensionPrompts must be an object"),
    ]
    for snapshot, message in cases:
        with pytest.raises(MacroError) as caught:
            FrozenMacros.from_snapshot(snapshot)
        assert caught.value.message == message


def test_expansion_limit() -> None:
    table = FrozenMacros.from_snapshot({"macroContext": {"names": {"char": "x" * 1024}}})
    with pytest.raises(MacroLimitExceeded) as caught:
        table.render("{{char}}" * (16 * 1024 + 1))
    assert caught.value.message == "macro expansion exceeds 16777216 bytes"
    assert len(table.render("{{char}}" * (16 * 1024))) == MACRO_LIMIT_BYTES


def test_pathological_input_renders_unchanged() -> None:
    empty = FrozenMacros.from_snapshot(None)
    for text in ("{" * 100_001, "}" * 100_001, "\\" * 100_001, "{{" * 50_000 + "}}" * 50_000):
        assert empty.render(text) == text


def test_context_macro_groups(macros: FrozenMacros) -> None:
    groups = macros.context_macro()
    assert groups is not None
    assert groups["chat"]["lastMessageId"] == "12"
    assert groups["names"]["char"] == "Frozen Alice"
    assert set(groups) == {"names", "character", "system", "chat"}



# --- Revision 2 ---------------------------------------------------------------------------------


def test_acceptance_5_greetings_with_and_without_alternates() -> None:
    both = FrozenMacros.from_snapshot({"macroContext": {"character": {
        "firstMessage": "Hi", "alternateGreetings": ["Yo", "Hey"]}}})
    assert [both.render(f"{{{{greeting::{n}}}}}") for n in ("0", "2", "9", "-3", "x")] == [
        "Hi", "Hey", "", "", "{{greeting::x}}"]
    assert [both.render(f"{{{{greeting::{n}}}}}") for n in ("00", "-0", "1", " 2 ", "-", "")] == [
        "Hi", "Hi", "Yo", "Hey", "{{greeting::-}}", "{{greeting::}}"]
    assert both.render("{{greeting::" + "9" * 5000 + "}}") == ""  # too large for a number
    assert both.render("{{greeting::" + "0" * 5000 + "2}}") == "Hey"
    no_alternates = FrozenMacros.from_snapshot(
        {"macroContext": {"character": {"firstMessage": "Hi"}}})
    assert no_alternates.render("{{greeting::2}}|{{greeting::-3}}|{{greeting::0}}") == (
        "{{greeting::2}}|{{greeting::-3}}|Hi")
    empty_list = FrozenMacros.from_snapshot(
        {"macroContext": {"character": {"firstMessage": "Hi", "alternateGreetings": []}}})
    assert empty_list.render("{{greeting::1}}") == "{{greeting::1}}"  # tavernlab choice
    no_first = FrozenMacros.from_snapshot(
        {"macroContext": {"character": {"alternateGreetings": ["Yo"]}}})
    assert no_first.render("{{greeting::0}}|{{greeting::1}}|{{charFirstMessage::0}}") == (
        "{{greeting::0}}|Yo|{{charFirstMessage::0}}")
    builtin_greeting = FrozenMacros.from_snapshot(
        {"macroContext": {"builtins": {"greeting": "From builtin"}}})
    assert builtin_greeting.render("{{greeting::0}}") == "From builtin"


def test_acceptance_7_value_types() -> None:
    for value in (3, True, {"k": "v"}):
        with pytest.raises(MacroError) as caught:
            FrozenMacros.from_snapshot({"macroContext": {"variableValues": {"local": {
                "turns": value}}}})
        assert caught.value.message == "macroContext.variableValues.local.turns must be a string"
    with pytest.raises(MacroError) as builtin:
        FrozenMacros.from_snapshot({"macroContext": {"builtins": {"maxPrompt": 8192}}})
    assert builtin.value.message == "macroContext.builtins.maxPrompt must be a string"
    numbers = FrozenMacros.from_snapshot({"macroContext": {"character": {
        "personaPosition": 2}}})
    assert numbers.render("{{personaPosition}}") == "2"
    zero = FrozenMacros.from_snapshot({"macroContext": {"character": {"personaPosition": 0}}})
    assert zero.render("{{personaposition}}") == "0"
    with pytest.raises(MacroLimitExceeded, match="macro input exceeds"):
        zero.render("x" * (MACRO_LIMIT_BYTES + 1))


@pytest.mark.parametrize("snapshot", [
    {"macroContext": {"character": {"alternateGreetings": ["Alt one"]}},
     "extensionPrompts": {"customWIOutlet_Map": {"value": "Old road"}}},
    {"macroContext": {"alternateGreetings": ["Alt one"], "character": {}},
     "extensionPrompts": {"customWIOutlet_Map": "Old road"}},
], ids=["upstream", "revision-1"])
def test_acceptance_8_both_snapshot_shapes(snapshot: dict[str, Any]) -> None:
    table = FrozenMacros.from_snapshot(snapshot)
    assert table.render("{{greeting::1}}|{{outlet::Map}}|{{outlet::map}}") == "Alt one|Old road|"
    groups = table.context_macro()
    assert groups is not None and "alternateGreetings" not in groups["character"]


def test_character_greetings_win_over_the_revision_1_location() -> None:
    table = FrozenMacros.from_snapshot({"macroContext": {
        "alternateGreetings": ["old"], "character": {"alternateGreetings": ["new"]}}})
    assert table.render("{{greeting::1}}") == "new"


def test_other_extension_prompts_are_ignored() -> None:
    table = FrozenMacros.from_snapshot({"extensionPrompts": {
        "2_floating_prompt": {"value": 3, "position": 1}, "x": [1], "customWIOutlet_": "e"}})
    assert table.render("[{{outlet::}}]|[{{outlet::x}}]") == "[e]|[]"


def test_acceptance_9_builtins_replace_fields_before_the_fallbacks() -> None:
    table = FrozenMacros.from_snapshot({"macroContext": {
        "names": {"char": "Ann"}, "builtins": {"char": "Bea"}}})
    assert table.render("{{char}}|{{charifnotgroup}}") == "Bea|Bea"


def test_an_unterminated_opener_stops_expansion() -> None:
    table = FrozenMacros.from_snapshot({"macroContext": {"names": {"user": "Bob"}}})
    assert table.render("{{user}} \\{{user}} {{open \\\\{{user}} {{user}}") == (
        "Bob {{user}} {{open \\\\{{user}} {{user}}")
    assert table.render("a {{b {{c}} d") == "a {{b {{c}} d"
    assert table.render("{{user}} \\\\{{x") == "Bob \\\\{{x"
    assert table.render("{{user}}{{") == "Bob{{"
