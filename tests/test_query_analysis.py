"""Bug-report queries: what analyse_query pulls out of a real-looking report, and the windows the embedder reads."""
from __future__ import annotations

from retrievers.query_analysis import LONG_QUERY_CHARS, analyse_query, salient_windows

REPORT = '''ModelChoiceIteratorValue is not hashable.
Description
Recently I migrated from Django 3.0 to Django 3.1. In my code, I add custom data-* attributes to the select
widget options. After the upgrade some of those options broke. Error is {TypeError}unhashable type: 'ModelChoiceIteratorValue'.
Example (this one breaks):
	def create_option(self, name, value, label, selected, index, subindex=None, attrs=None):
		context = super().create_option(name, value, label, selected, index, subindex, attrs)
		if value in self.show_fields:
			context['attrs']['data-fields'] = json.dumps(self.show_fields[value])
Traceback (most recent call last):
  File "/home/me/venv/lib/python3.8/site-packages/django/forms/widgets.py", line 640, in create_option
    if value in self.show_fields:
  File "D:\\Work\\project\\app\\widgets.py", line 12, in create_option
TypeError: unhashable type: 'ModelChoiceIteratorValue'
See django/forms/models.py and the method ModelChoiceIterator.choice or forms.ModelChoiceField.
'''


def test_frames_paths_names_and_errors_come_out_of_a_report():
    a = analyse_query(REPORT)
    assert [(f.path, f.line, f.function) for f in a.frames] == [
        ("/home/me/venv/lib/python3.8/site-packages/django/forms/widgets.py", 640, "create_option"),
        ("D:/Work/project/app/widgets.py", 12, "create_option"),
    ]
    assert "django/forms/models.py" in a.paths
    assert a.paths[:2] == [f.path for f in a.frames]          # frames first, each path once
    assert "ModelChoiceIterator.choice" in a.dotted and "forms.ModelChoiceField" in a.dotted
    assert not any(d.endswith(".py") or d.startswith("models.py") for d in a.dotted)
    assert a.identifiers[0] == "create_option"   # most frequent first (frames count): 3 in the text + 2 frames
    assert "ModelChoiceIteratorValue" in a.identifiers[:3]
    assert {"create_option", "show_fields", "ModelChoiceIterator"} <= set(a.identifiers)
    assert not {"value", "context", "the", "self", "name"} & set(a.identifiers)   # prose and Python words
    assert "TypeError: unhashable type: 'ModelChoiceIteratorValue'" in a.errors
    names = a.symbol_names()
    assert names.index("choice") < names.index("ModelChoiceIterator")  # a dotted name's last part first


def test_constants_and_dunders_are_code_names_and_english_is_not():
    a = analyse_query("Set default FILE_UPLOAD_PERMISSION to 0o644 when __init__ of Storage runs; This Is Prose.")
    assert "FILE_UPLOAD_PERMISSION" in a.identifiers and "__init__" in a.identifiers
    assert "This" not in a.identifiers and "Prose" not in a.identifiers and "Storage" not in a.identifiers


def test_a_short_query_is_one_window_and_a_long_report_keeps_its_salient_passages():
    assert salient_windows(analyse_query("where is the cache path set")) == ["where is the cache path set"]
    filler = " ".join(["the page renders slowly when many people visit it at once"] * 60)
    long_report = f"Admin crashes on save.\n{filler}\nThe failing call is QuerySet.bulk_update_or_create " \
                  f"in BulkUpdateCompiler.as_sql raising FieldError.\n{filler}"
    a = analyse_query(long_report)
    assert len(long_report) > LONG_QUERY_CHARS
    windows = salient_windows(a)
    assert 2 <= len(windows) <= 3
    assert windows[0].startswith("Admin crashes on save.")
    assert any("BulkUpdateCompiler.as_sql" in w for w in windows[1:])   # not only the first 256 tokens
    assert all(len(w.split()) <= 120 for w in windows)
