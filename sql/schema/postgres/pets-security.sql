-- Row-level security for the pets API (issue #30), run after the rows are loaded. Anyone may
-- read; a request's verified subject (the `sub` of request.jwt.claims, which Spout sets in the
-- request's transaction) may add pets it owns and change or delete only its own. Another
-- caller's pet is invisible to UPDATE and DELETE: those answer 404, as for a missing pet.
-- FORCE applies the policies to the table's owner too (Spout's login role usually is one);
-- superusers bypass them always, so Spout must not log in as one.
ALTER TABLE pet ENABLE ROW LEVEL SECURITY;
ALTER TABLE pet FORCE ROW LEVEL SECURITY;
CREATE POLICY pet_read ON pet FOR SELECT USING (true);
CREATE POLICY pet_create ON pet FOR INSERT
    WITH CHECK (owner = nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub');
-- An owner may give a pet away (WITH CHECK true): the new owner then changes it.
CREATE POLICY pet_change ON pet FOR UPDATE
    USING (owner = nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub')
    WITH CHECK (true);
CREATE POLICY pet_delete ON pet FOR DELETE
    USING (owner = nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub');
-- Events: anyone may read; a subject may add events only to its own pets. (A pet's events go
-- with it: the cascade of its foreign key runs as the table's owner, past these policies.)
ALTER TABLE event ENABLE ROW LEVEL SECURITY;
ALTER TABLE event FORCE ROW LEVEL SECURITY;
CREATE POLICY event_read ON event FOR SELECT USING (true);
CREATE POLICY event_create ON event FOR INSERT
    WITH CHECK (EXISTS (
        SELECT 1 FROM pet
        WHERE pet.name = event.name
          AND pet.owner = nullif(current_setting('request.jwt.claims', true), '')::json ->> 'sub'));
