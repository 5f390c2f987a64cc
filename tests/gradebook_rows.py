"""The gradebook rows grading writes, comparable between two courses."""

from sqlalchemy import create_engine, text


def gradebook_rows(course) -> dict:
    """Every row grading writes to the gradebook, keyed by names instead of generated ids."""
    queries = {
        "student": "SELECT id, first_name, last_name, email, lms_user_id FROM student",
        "submission": """SELECT a.name, s.student_id, s.timestamp, s.extension
            FROM submitted_assignment s JOIN assignment a ON s.assignment_id = a.id""",
        "notebook": """SELECT a.name, s.student_id, n.name, sn.flagged, sn.late_submission_penalty
            FROM submitted_notebook sn JOIN submitted_assignment s ON sn.assignment_id = s.id
            JOIN assignment a ON s.assignment_id = a.id JOIN notebook n ON sn.notebook_id = n.id""",
    }
    for table, columns in [
        ("grade", "g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade"),
        ("comment", "g.auto_comment, g.manual_comment"),
    ]:
        queries[table] = f"""SELECT a.name, s.student_id, n.name, c.name, {columns}
            FROM {table} g JOIN base_cell c ON g.cell_id = c.id
            JOIN submitted_notebook sn ON g.notebook_id = sn.id
            JOIN submitted_assignment s ON sn.assignment_id = s.id
            JOIN assignment a ON s.assignment_id = a.id JOIN notebook n ON sn.notebook_id = n.id"""
    engine = create_engine(course.db_url)
    try:
        with engine.connect() as db:
            return {name: sorted(map(tuple, db.execute(text(q)))) for name, q in queries.items()}
    finally:
        engine.dispose()
