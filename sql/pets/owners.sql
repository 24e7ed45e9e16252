-- GET /owners: everyone who owns a pet, by name. The `pets` detail binds :owner from "owner".
SELECT owner
FROM pet
WHERE owner IS NOT NULL
GROUP BY owner
ORDER BY owner
